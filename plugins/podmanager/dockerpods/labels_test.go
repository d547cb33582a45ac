package dockerpods

import (
	"errors"
	"reflect"
	"testing"

	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

func kubeletLabels(extra map[string]string) map[string]string {
	labels := map[string]string{
		LabelPodName:       "web",
		LabelPodNamespace:  "default",
		LabelPodUID:        "uid-1",
		LabelContainerName: "app",
		LabelDockerType:    DockerTypeContainer,
	}
	for key, value := range extra {
		if value == "" {
			delete(labels, key)
			continue
		}
		labels[key] = value
	}
	return labels
}

func TestParseLabels(t *testing.T) {
	web := podapi.Pod{ID: podapi.PodID{Namespace: "default", Name: "web"}, UID: "uid-1"}
	tests := []struct {
		name    string
		labels  map[string]string
		want    ContainerLabels
		wantErr bool
	}{
		{
			name:   "app container",
			labels: kubeletLabels(nil),
			want:   ContainerLabels{Pod: web, ContainerName: "app"},
		},
		{
			name:   "sandbox",
			labels: kubeletLabels(map[string]string{LabelDockerType: DockerTypeSandbox, LabelContainerName: "POD"}),
			want:   ContainerLabels{Pod: web, ContainerName: "POD", Sandbox: true},
		},
		{
			name:   "sandbox without container name label",
			labels: kubeletLabels(map[string]string{LabelDockerType: DockerTypeSandbox, LabelContainerName: ""}),
			want:   ContainerLabels{Pod: web, Sandbox: true},
		},
		{
			name:   "sandbox known by name when the type label is missing",
			labels: kubeletLabels(map[string]string{LabelDockerType: "", LabelContainerName: "POD"}),
			want:   ContainerLabels{Pod: web, ContainerName: "POD", Sandbox: true},
		},
		{
			name: "annotations without prefix; empty key ignored",
			labels: kubeletLabels(map[string]string{
				"annotation.io.contivpp.memif.secret": "s3cret",
				"annotation.":                         "no key",
				"io.contivpp.other":                   "not an annotation",
			}),
			want: ContainerLabels{Pod: web, ContainerName: "app",
				Annotations: map[string]string{"io.contivpp.memif.secret": "s3cret"}},
		},
		{name: "no uid", labels: kubeletLabels(map[string]string{LabelPodUID: ""}), wantErr: true},
		{name: "no pod name", labels: kubeletLabels(map[string]string{LabelPodName: ""}), wantErr: true},
		{name: "no namespace", labels: kubeletLabels(map[string]string{LabelPodNamespace: ""}), wantErr: true},
		{name: "slash in pod name", labels: kubeletLabels(map[string]string{LabelPodName: "a/b"}), wantErr: true},
		{name: "app container without name", labels: kubeletLabels(map[string]string{LabelContainerName: ""}), wantErr: true},
		{name: "unknown docker type", labels: kubeletLabels(map[string]string{LabelDockerType: "volume"}), wantErr: true},
		{name: "no labels", labels: nil, wantErr: true},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			got, err := ParseLabels(test.labels)
			if test.wantErr {
				if !errors.Is(err, ErrNotPodContainer) {
					t.Fatalf("ParseLabels(%v) error = %v, want ErrNotPodContainer", test.labels, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseLabels(%v): %v", test.labels, err)
			}
			if !reflect.DeepEqual(got, test.want) {
				t.Errorf("ParseLabels(%v)\n got %+v\nwant %+v", test.labels, got, test.want)
			}
		})
	}
}
