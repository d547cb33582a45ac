package podtracker

import (
	"reflect"
	"testing"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

const memif = "contivpp.io/memif"

var web = podapi.PodID{Namespace: "default", Name: "web"}

func state(uid string, containers ...podapi.PodContainer) *podapi.PodState {
	return &podapi.PodState{Pod: podapi.Pod{ID: web, UID: uid}, Containers: containers}
}

func TestMerge(t *testing.T) {
	mounted := podapi.PodContainer{Name: "app", RuntimeID: "c1", MountSources: []string{"/run/m/a1"}}
	admitted := podapi.PodContainer{Name: "app", DeviceIDs: map[string][]string{memif: {"memif-001"}}}
	sidecar := podapi.PodContainer{Name: "sidecar"}
	tests := []struct {
		name             string
		runtime, kubelet *podapi.PodState
		want             *podapi.PodState
	}{
		{name: "gone from both", want: nil},
		{name: "runtime only", runtime: state("u1", mounted), want: state("u1", mounted)},
		{name: "admitted by kubelet only", kubelet: state("", admitted), want: state("", admitted)},
		{
			name:    "device IDs join the runtime container of the same name",
			runtime: state("u1", mounted),
			kubelet: state("", admitted, sidecar),
			want: state("u1",
				podapi.PodContainer{Name: "app", RuntimeID: "c1", MountSources: []string{"/run/m/a1"},
					DeviceIDs: map[string][]string{memif: {"memif-001"}}},
				sidecar),
		},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			if got := Merge(test.runtime, test.kubelet); !reflect.DeepEqual(got, test.want) {
				t.Errorf("Merge\n got %+v\nwant %+v", got, test.want)
			}
		})
	}
}

func TestMergeAll(t *testing.T) {
	other := podapi.PodState{Pod: podapi.Pod{ID: podapi.PodID{Namespace: "a", Name: "z"}}}
	got := MergeAll([]podapi.PodState{*state("u1")}, []podapi.PodState{*state(""), other})
	want := []podapi.PodState{other, *state("u1")}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("MergeAll\n got %+v\nwant %+v", got, want)
	}
}

// describe renders events for comparison: "AddPod default/web (uid u1) [app]".
func describe(events []controllerapi.Event) []string {
	var out []string
	for _, event := range events {
		text := event.String()
		if add, ok := event.(*podapi.AddPod); ok {
			for _, container := range add.Containers {
				text += " " + container.Name
			}
		}
		out = append(out, text)
	}
	return out
}

// withSets returns container with memif devices and mount sources.
func withSets(container podapi.PodContainer, devices, mounts []string) podapi.PodContainer {
	container.DeviceIDs = map[string][]string{memif: devices}
	container.MountSources = mounts
	return container
}

func TestDecide(t *testing.T) {
	app := podapi.PodContainer{Name: "app", RuntimeID: "c1"}
	tests := []struct {
		name           string
		announced      *podapi.PodState
		live           *podapi.PodState
		wantAnnounced  *podapi.PodState
		wantEventTexts []string
	}{
		{name: "unknown and gone", wantEventTexts: nil},
		{
			name: "new pod is added", live: state("u1"),
			wantAnnounced: state("u1"), wantEventTexts: []string{"AddPod default/web (uid u1)"},
		},
		{
			name: "nothing changed", announced: state("u1", app), live: state("u1", app),
			wantAnnounced: state("u1", app),
		},
		{
			name: "new container is announced again", announced: state("u1"), live: state("u1", app),
			wantAnnounced: state("u1", app), wantEventTexts: []string{"AddPod default/web (uid u1) app"},
		},
		{
			name: "gone pod is deleted", announced: state("u1", app),
			wantAnnounced: nil, wantEventTexts: []string{"DeletePod default/web (uid u1)"},
		},
		{
			name: "recreated pod: old deleted before new added", announced: state("u1"), live: state("u2"),
			wantAnnounced:  state("u2"),
			wantEventTexts: []string{"DeletePod default/web (uid u1)", "AddPod default/web (uid u2)"},
		},
		{
			name: "kubelet-only answer keeps the announced UID", announced: state("u1"), live: state(""),
			wantAnnounced: state("u1"),
		},
		{
			name:          "kubelet-only answer keeps the annotation the sandbox carried",
			announced:     annotated(state("u1"), `[{"network": "red"}]`),
			live:          state(""),
			wantAnnounced: annotated(state("u1"), `[{"network": "red"}]`),
		},
		{
			name: "admitted pod learns its UID from the runtime", announced: state(""), live: state("u1", app),
			wantAnnounced: state("u1", app), wantEventTexts: []string{"AddPod default/web (uid u1) app"},
		},
		{
			name:          "the same devices and mounts in another order are no change",
			announced:     state("u1", withSets(app, []string{"m0", "m1", "m2"}, []string{"/a", "/b"})),
			live:          state("u1", withSets(app, []string{"m2", "m0", "m1"}, []string{"/b", "/a"})),
			wantAnnounced: state("u1", withSets(app, []string{"m0", "m1", "m2"}, []string{"/a", "/b"})),
		},
		{
			name:           "another device is a change",
			announced:      state("u1", withSets(app, []string{"m0", "m1"}, nil)),
			live:           state("u1", withSets(app, []string{"m0", "m2"}, nil)),
			wantAnnounced:  state("u1", withSets(app, []string{"m0", "m2"}, nil)),
			wantEventTexts: []string{"AddPod default/web (uid u1) app"},
		},
		{
			name:           "a device held twice is not the same as once",
			announced:      state("u1", withSets(app, []string{"m0", "m0"}, nil)),
			live:           state("u1", withSets(app, []string{"m0"}, nil)),
			wantAnnounced:  state("u1", withSets(app, []string{"m0"}, nil)),
			wantEventTexts: []string{"AddPod default/web (uid u1) app"},
		},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			got, events := Decide(test.announced, test.live)
			if !reflect.DeepEqual(got, test.wantAnnounced) {
				t.Errorf("announced\n got %+v\nwant %+v", got, test.wantAnnounced)
			}
			if texts := describe(events); !reflect.DeepEqual(texts, test.wantEventTexts) {
				t.Errorf("events\n got %q\nwant %q", texts, test.wantEventTexts)
			}
		})
	}
}

// annotated returns pod with its memif.contivpp.io/networks annotation.
func annotated(pod *podapi.PodState, networks string) *podapi.PodState {
	pod.Pod.Networks = networks
	return pod
}
