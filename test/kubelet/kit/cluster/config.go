package cluster

import (
	"fmt"
	"os"
	"text/template"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// The peers' configuration files. Each value is what this harness needs,
// not a recommendation for a node: everything listens on loopback, and
// kubelet trusts any client certificate of the cluster's CA.

// kubeconfig is a client's kubeconfig: the API server at Server, as User
// with the certificate and key in CertFile and KeyFile, trusting the CA in
// CAFile.
type kubeconfig struct{ Server, CAFile, User, CertFile, KeyFile string }

// write writes the kubeconfig at path with the files' contents in it, not
// their paths: from a kubeconfig naming a client certificate's files,
// client-go reloads them in a goroutine that nothing stops, which outlives
// the cluster and logs "no such file" once its work dir is gone.
func (k kubeconfig) write(path string) error {
	var pem [3][]byte
	for i, file := range []string{k.CAFile, k.CertFile, k.KeyFile} {
		var err error
		if pem[i], err = os.ReadFile(file); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	config := clientcmdapi.NewConfig()
	config.Clusters["memif-test"] = &clientcmdapi.Cluster{Server: k.Server, CertificateAuthorityData: pem[0]}
	config.AuthInfos[k.User] = &clientcmdapi.AuthInfo{ClientCertificateData: pem[1], ClientKeyData: pem[2]}
	config.Contexts["memif-test"] = &clientcmdapi.Context{Cluster: "memif-test", AuthInfo: k.User}
	config.CurrentContext = "memif-test"
	if err := clientcmd.WriteToFile(*config, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// containerdTemplate is a version 2 configuration: containerd 1.6 and 1.7
// read it as is and 2.x migrates it. restrict_oom_score_adj keeps the CRI
// from asking for a negative oom_score_adj, which some VMs forbid (runc
// then fails with "can't get final child's PID from pipe"). NRI is off
// because its socket path is fixed. EnableCDI turns on 1.7's CDI
// (enable_cdi, off by default; 1.6 has no such key, 2.x has it on) over
// 2.x's default spec dirs, where the DRA driver writes (/var/run/cdi).
var containerdTemplate = template.Must(template.New("containerd").Parse(`version = 2
root = "{{.Root}}"
state = "{{.State}}"
disabled_plugins = ["io.containerd.nri.v1.nri", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]

[grpc]
  address = "{{.Socket}}"

[ttrpc]
  address = "{{.Socket}}.ttrpc"

[debug]
  level = "warn"

[plugins."io.containerd.internal.v1.opt"]
  path = "{{.Root}}/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{{.PauseImage}}"
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
{{- if .EnableCDI}}
  enable_cdi = true
  cdi_spec_dirs = ["/etc/cdi", "/var/run/cdi"]
{{- end}}
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{{.CNIBinDir}}"
    conf_dir = "{{.CNIConfDir}}"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "{{.Runc}}"
        SystemdCgroup = false
`))

// cniTemplate gives each pod an interface on a bridge of its own cluster.
// The bridge has no address and no route, so pods reach nothing but each
// other; the agent's pods use the host network anyway.
var cniTemplate = template.Must(template.New("cni").Parse(`{
  "cniVersion": "0.4.0",
  "name": "memif-test",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "{{.Bridge}}",
      "isGateway": false,
      "ipMasq": false,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "10.244.0.0/24"}]]
      }
    }
  ]
}
`))

// kubeletTemplate: listening on the node's address only (see
// createBridge); cgroupfs on the cgroup v1 hybrid hierarchy (failCgroupV1
// false), under a cgroup root of its own; eviction and image GC thresholds
// low, so a full disk of a shared machine does not evict the test pods.
// syncFrequency 10s (default 1m): kubelet swaps an updated ConfigMap's
// files in a pod's volume at the pod's periodic sync, so the agent sees a
// networks.conf change within seconds, as a test of its live reload needs.
var kubeletTemplate = template.Must(template.New("kubelet").Parse(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: {{.Address}}
port: {{.Port}}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: {{.HealthzPort}}
tlsCertFile: {{.Cert}}
tlsPrivateKeyFile: {{.Key}}
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: false
  x509:
    clientCAFile: {{.CA}}
authorization:
  mode: AlwaysAllow
containerRuntimeEndpoint: unix://{{.RuntimeSocket}}
cgroupDriver: cgroupfs
cgroupRoot: {{.CgroupRoot}}
failCgroupV1: false
failSwapOn: false
serializeImagePulls: false
evictionHard:
  memory.available: "1Mi"
  nodefs.available: "1%"
  nodefs.inodesFree: "1%"
  imagefs.available: "1%"
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
syncFrequency: 10s
`))

func writeTemplate(path string, t *template.Template, data any, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := t.Execute(f, data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
