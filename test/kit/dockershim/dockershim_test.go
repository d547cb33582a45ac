package dockershim

import (
	"maps"
	"testing"

	"github.com/contivpp/memif-agent/plugins/podmanager/dockerpods"
)

func TestPodNames(t *testing.T) {
	pod := Pod{Namespace: "default", Name: "web", UID: "1234"}
	cases := []struct {
		name       string
		container  string
		dockerType string
		wantName   string
		wantLabels map[string]string
	}{
		{
			name: "sandbox", container: dockerpods.SandboxContainerName, dockerType: dockerpods.DockerTypeSandbox,
			wantName: "k8s_POD_web_default_1234_0",
			wantLabels: map[string]string{
				"io.kubernetes.pod.name": "web", "io.kubernetes.pod.namespace": "default", "io.kubernetes.pod.uid": "1234",
				"io.kubernetes.container.name": "POD", "io.kubernetes.docker.type": "podsandbox",
			},
		},
		{
			name: "app container", container: "app", dockerType: dockerpods.DockerTypeContainer,
			wantName: "k8s_app_web_default_1234_0",
			wantLabels: map[string]string{
				"io.kubernetes.pod.name": "web", "io.kubernetes.pod.namespace": "default", "io.kubernetes.pod.uid": "1234",
				"io.kubernetes.container.name": "app", "io.kubernetes.docker.type": "container",
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := pod.ContainerName(tc.container); got != tc.wantName {
				t.Errorf("ContainerName(%q) = %q; want %q", tc.container, got, tc.wantName)
			}
			if got := pod.Labels(tc.container, tc.dockerType); !maps.Equal(got, tc.wantLabels) {
				t.Errorf("Labels(%q, %q) = %v; want %v", tc.container, tc.dockerType, got, tc.wantLabels)
			}
		})
	}
}
