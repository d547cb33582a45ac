// Package dockerd starts a private, real Docker engine for tests and makes
// kubelet-style pods in it.
//
// Start runs /usr/sbin/dockerd with its own data root, exec root, socket and
// pid file under a short temporary directory, with no bridge and no iptables
// rules, so nothing of the host's Docker (if any) is touched. The daemon is
// stopped and its directory removed when the test ends. Restart stops it and
// starts it again on the same roots, which is what a dockerd restart looks
// like to a client.
//
// Tests that need a daemon call Start. When one cannot run (not root, no
// dockerd binary, the daemon does not come up) the test is skipped with the
// reason, except under CI=true, where it fails: CI must run what it claims.
//
// No registry is reachable, so ImportSleeperImage builds a static Go binary
// that waits for SIGTERM and imports it as an image. RunPod and CreatePod make
// a pod the way kubelet's dockershim does: a sandbox container and one
// container per app container, all carrying kubelet's labels, with the envs,
// annotations (as "annotation.<key>" labels) and bind mounts given, and no
// network.
//
// Example:
//
//	daemon := dockerd.Start(t)
//	client := daemon.Client(t)
//	image := dockerd.ImportSleeperImage(t, client)
//	pod := dockerd.RunPod(t, client, dockerd.PodSpec{
//		Namespace: "default", Name: "web", UID: "uid-1", Image: image,
//		Containers: []dockerd.ContainerSpec{{
//			Name:        "app",
//			Env:         map[string]string{"MEMIF_SOCKET": "/run/vpp/memif.sock"},
//			Annotations: map[string]string{"io.contivpp.memif.secret": "s"},
//			Mounts:      []dockerd.Mount{{HostPath: dir, ContainerPath: "/run/vpp"}},
//		}},
//	})
//	defer pod.Remove(t, client)
//
// The package is test support only: it owns the daemons and containers it
// starts and must not touch any other Docker state on the host.
package dockerd
