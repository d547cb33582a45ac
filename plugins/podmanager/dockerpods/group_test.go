package dockerpods

import (
	"reflect"
	"strings"
	"testing"

	docker "github.com/fsouza/go-dockerclient"

	"github.com/contivpp/memif-agent/plugins/networks/memifspec"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/test/kit/testlog"
)

func container(id string, created int64, labels map[string]string, mounts ...string) docker.APIContainers {
	c := docker.APIContainers{ID: id, Created: created, Labels: labels}
	for _, source := range mounts {
		c.Mounts = append(c.Mounts, docker.APIMount{Source: source, Destination: "/mnt" + source})
	}
	return c
}

func TestGroupPods(t *testing.T) {
	sandbox := func(uid string) map[string]string {
		return kubeletLabels(map[string]string{LabelPodUID: uid, LabelDockerType: DockerTypeSandbox, LabelContainerName: "POD"})
	}
	app := func(uid, name string) map[string]string {
		return kubeletLabels(map[string]string{LabelPodUID: uid, LabelContainerName: name})
	}
	web := podapi.PodID{Namespace: "default", Name: "web"}
	tests := []struct {
		name       string
		containers []docker.APIContainers
		want       []podapi.PodState
		wantWarns  int
	}{
		{
			name:       "sandbox only",
			containers: []docker.APIContainers{container("s1", 1, sandbox("u1"))},
			want:       []podapi.PodState{{Pod: podapi.Pod{ID: web, UID: "u1"}}},
		},
		{
			name: "the sandbox's annotation labels are the pod's",
			containers: []docker.APIContainers{
				container("c1", 2, app("u1", "app")),
				container("s1", 1, withLabel(sandbox("u1"), AnnotationLabelPrefix+memifspec.AnnotationKey, `[{"network": "red"}]`)),
			},
			want: []podapi.PodState{{Pod: podapi.Pod{ID: web, UID: "u1", Networks: `[{"network": "red"}]`},
				Containers: []podapi.PodContainer{{Name: "app", RuntimeID: "c1"}}}},
		},
		{
			name: "app containers by name with sorted mount sources",
			containers: []docker.APIContainers{
				container("c2", 2, app("u1", "zeta")),
				container("s1", 1, sandbox("u1")),
				container("c1", 2, app("u1", "alpha"), "/b", "/a"),
			},
			want: []podapi.PodState{{Pod: podapi.Pod{ID: web, UID: "u1"}, Containers: []podapi.PodContainer{
				{Name: "alpha", RuntimeID: "c1", MountSources: []string{"/a", "/b"}},
				{Name: "zeta", RuntimeID: "c2"},
			}}},
		},
		{
			name: "newest incarnation wins",
			containers: []docker.APIContainers{
				container("old-s", 1, sandbox("old")),
				container("old-c", 2, app("old", "app")),
				container("new-s", 5, sandbox("new")),
			},
			want: []podapi.PodState{{Pod: podapi.Pod{ID: web, UID: "new"}}},
		},
		{
			name: "unparsable labels skipped with a warning",
			containers: []docker.APIContainers{
				container("x", 1, map[string]string{LabelPodUID: "u9"}),
				container("s1", 1, sandbox("u1")),
			},
			want:      []podapi.PodState{{Pod: podapi.Pod{ID: web, UID: "u1"}}},
			wantWarns: 1,
		},
		{name: "nothing", want: []podapi.PodState{}},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			log := testlog.Recording()
			got := GroupPods(test.containers, log)
			if !reflect.DeepEqual(got, test.want) {
				t.Errorf("GroupPods\n got %+v\nwant %+v", got, test.want)
			}
			warns := 0
			for _, line := range log.Lines() {
				if strings.HasPrefix(line, "WARN skipping a docker container container=") && strings.Contains(line, " err=") {
					warns++
				}
			}
			if lines := log.Lines(); warns != test.wantWarns || len(lines) != warns {
				t.Errorf("logged %q, want %d warnings of a skipped container", lines, test.wantWarns)
			}
		})
	}
}

func withLabel(labels map[string]string, key, value string) map[string]string {
	labels[key] = value
	return labels
}
