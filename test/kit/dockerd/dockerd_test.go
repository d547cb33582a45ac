package dockerd_test

import (
	"testing"

	docker "github.com/fsouza/go-dockerclient"

	"github.com/contivpp/memif-agent/test/kit/dockerd"
)

func listPod(t *testing.T, client *docker.Client, uid string) []docker.APIContainers {
	t.Helper()
	containers, err := client.ListContainers(docker.ListContainersOptions{
		All:     true,
		Filters: map[string][]string{"label": {"io.kubernetes.pod.uid=" + uid}},
	})
	if err != nil {
		t.Fatalf("list containers of pod %s: %v", uid, err)
	}
	return containers
}

func TestPodCarriesKubeletLabelsMountsAndSurvivesRestart(t *testing.T) {
	daemon := dockerd.Start(t)
	client := daemon.Client(t)
	image := dockerd.ImportSleeperImage(t, client)
	hostDir := t.TempDir()
	spec := dockerd.PodSpec{
		Namespace: "default", Name: "web", UID: "uid-web", Image: image,
		Containers: []dockerd.ContainerSpec{{
			Name:        "app",
			Env:         map[string]string{"MEMIF_SOCKET": "/run/vpp/memif.sock"},
			Annotations: map[string]string{"io.contivpp.memif.secret": "s3cret"},
			Mounts:      []dockerd.Mount{{HostPath: hostDir, ContainerPath: "/run/vpp"}},
		}},
	}
	autoRemoved := spec
	autoRemoved.Name, autoRemoved.UID, autoRemoved.AutoRemove = "gone", "uid-gone", true

	pod := dockerd.RunPod(t, client, spec)
	dockerd.RunPod(t, client, autoRemoved)

	containers := listPod(t, client, "uid-web")
	if len(containers) != 2 {
		t.Fatalf("pod has %d containers, want sandbox and app", len(containers))
	}
	app, err := client.InspectContainerWithOptions(docker.InspectContainerOptions{ID: pod.ContainerIDs["app"]})
	if err != nil {
		t.Fatalf("inspect app container: %v", err)
	}
	checks := []struct{ name, got, want string }{
		{"pod name label", app.Config.Labels["io.kubernetes.pod.name"], "web"},
		{"container name label", app.Config.Labels["io.kubernetes.container.name"], "app"},
		{"docker type label", app.Config.Labels["io.kubernetes.docker.type"], "container"},
		{"annotation label", app.Config.Labels["annotation.io.contivpp.memif.secret"], "s3cret"},
		{"mount source", app.Mounts[0].Source, hostDir},
		{"network", app.HostConfig.NetworkMode, "none"},
		{"state", app.State.StateString(), "running"},
	}
	for _, check := range checks {
		t.Run(check.name, func(t *testing.T) {
			if check.got != check.want {
				t.Errorf("got %q, want %q", check.got, check.want)
			}
		})
	}

	daemon.Restart(t)
	client = daemon.Client(t)
	t.Run("plain pod kept after restart", func(t *testing.T) {
		if got := len(listPod(t, client, "uid-web")); got != 2 {
			t.Errorf("pod has %d containers after restart, want 2", got)
		}
	})
	t.Run("auto-removed pod gone after restart", func(t *testing.T) {
		if got := len(listPod(t, client, "uid-gone")); got != 0 {
			t.Errorf("auto-removed pod has %d containers after restart, want 0", got)
		}
	})
	pod.Remove(t, client)
	if got := len(listPod(t, client, "uid-web")); got != 0 {
		t.Errorf("pod has %d containers after Remove, want 0", got)
	}
}
