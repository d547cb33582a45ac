package netconf

import (
	"slices"
	"strings"
	"testing"
)

func TestReconcile(t *testing.T) {
	red := Network{Name: "red", Type: L3, Subnet: "10.70.0.0/24"}
	redMoved := Network{Name: "red", Type: L3, Subnet: "10.71.0.0/24"}
	redInterrupt := Network{Name: "red", Type: L3, Subnet: "10.70.0.0/24", RxMode: RxInterrupt}
	redL2 := Network{Name: "red", Type: L2}
	redRenumbered := Network{Name: "red", Type: L3, Subnet: "10.70.0.0/24", ID: 5}
	redShared := Network{Name: "red", Type: L3, Subnet: "10.70.0.0/24", NodePrefixLength: 28}
	redDefaultShare := Network{Name: "red", Type: L3, Subnet: "10.70.0.0/24", NodePrefixLength: DefaultNodePrefixLength}
	lab := Network{Name: "lab", Type: L2}
	blue := Network{Name: "blue", Type: L3, Subnet: "10.80.0.0/24"}
	blueOnRedTable := Network{Name: "blue", Type: L3, Subnet: "10.80.0.0/24", ID: DeriveID("red")}
	redPods := map[string][]string{"red": {"default/b", "default/a"}}
	for _, tc := range []struct {
		name         string
		applied      Config
		desired      Config
		podsOf       map[string][]string
		want         Config
		wantRefusals []Change
		wantMessage  string
	}{
		{name: "unused network changes",
			applied: Config{Networks: []Network{red, lab}, DefaultNetwork: "lab"},
			desired: Config{Networks: []Network{redMoved}},
			want:    Config{Networks: []Network{redMoved}}},
		{name: "a new network beside a used one",
			applied: Config{Networks: []Network{red}}, podsOf: redPods,
			desired: Config{Networks: []Network{red, blue}, DefaultNetwork: "blue"},
			want:    Config{Networks: []Network{red, blue}, DefaultNetwork: "blue"}},
		{name: "rx mode of a used network",
			applied: Config{Networks: []Network{red}}, podsOf: redPods,
			desired: Config{Networks: []Network{redInterrupt}},
			want:    Config{Networks: []Network{redInterrupt}}},
		{name: "subnet of a used network",
			applied: Config{Networks: []Network{red, lab}}, podsOf: redPods,
			desired: Config{Networks: []Network{redMoved}},
			want:    Config{Networks: []Network{red}}, wantRefusals: []Change{ChangeSubnet},
			wantMessage: `network "red": changing its subnet from 10.70.0.0/24 to 10.71.0.0/24 is refused while pods default/a, default/b use it; it applies once they are gone`},
		{name: "type of a used network",
			applied: Config{Networks: []Network{red}}, podsOf: redPods,
			desired: Config{Networks: []Network{redL2}},
			want:    Config{Networks: []Network{red}}, wantRefusals: []Change{ChangeType},
			wantMessage: "changing its type from l3 to l2"},
		{name: "id of a used network",
			applied: Config{Networks: []Network{red}}, podsOf: redPods,
			desired: Config{Networks: []Network{redRenumbered}},
			want:    Config{Networks: []Network{red}}, wantRefusals: []Change{ChangeID},
			wantMessage: "changing its VRF table from 16023837 to 5"},
		{name: "node share of a used network",
			applied: Config{Networks: []Network{red}}, podsOf: redPods,
			desired: Config{Networks: []Network{redShared}},
			want:    Config{Networks: []Network{red}}, wantRefusals: []Change{ChangeNodePrefix},
			wantMessage: "changing its node-prefix-length from 26 to 28"},
		{name: "the default node share written out",
			applied: Config{Networks: []Network{red}}, podsOf: redPods,
			desired: Config{Networks: []Network{redDefaultShare}},
			want:    Config{Networks: []Network{redDefaultShare}}},
		{name: "removal of a used network",
			applied: Config{Networks: []Network{red, lab}, DefaultNetwork: "red"}, podsOf: redPods,
			desired: Config{Networks: []Network{lab}, DefaultNetwork: "lab"},
			want:    Config{Networks: []Network{lab, red}, DefaultNetwork: "lab"}, wantRefusals: []Change{ChangeRemoved},
			wantMessage: `network "red": its removal is refused while pods default/a, default/b use it`},
		{name: "a used network's table taken by a new one",
			applied: Config{Networks: []Network{red}}, podsOf: redPods,
			desired: Config{Networks: []Network{blueOnRedTable}, DefaultNetwork: "blue"},
			want:    Config{Networks: []Network{red}}, wantRefusals: []Change{ChangeRemoved, ChangeIDHeld},
			wantMessage: `network "blue": taking VRF table 16023837 is refused while pods default/a, default/b use network "red"`},
		{name: "refusals once the pods are gone",
			applied: Config{Networks: []Network{red}}, podsOf: map[string][]string{"red": {}},
			desired: Config{Networks: []Network{blueOnRedTable}},
			want:    Config{Networks: []Network{blueOnRedTable}}},
		{name: "many pods are counted, not listed",
			applied: Config{Networks: []Network{red}}, podsOf: map[string][]string{"red": {"p/1", "p/2", "p/3", "p/4", "p/5", "p/6", "p/7"}},
			desired: Config{},
			want:    Config{Networks: []Network{red}}, wantRefusals: []Change{ChangeRemoved},
			wantMessage: "pods p/1, p/2, p/3, p/4, p/5 and 2 more use it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, refusals := Reconcile(tc.applied, tc.desired, tc.podsOf)
			if got.DefaultNetwork != tc.want.DefaultNetwork || !slices.Equal(got.Networks, tc.want.Networks) {
				t.Errorf("Reconcile = %+v, want %+v", got, tc.want)
			}
			if err := got.Validate(); err != nil {
				t.Errorf("Reconcile's config is invalid: %v", err)
			}
			var changes []Change
			var messages []string
			for _, r := range refusals {
				changes = append(changes, r.Change)
				messages = append(messages, r.Error())
			}
			if !slices.Equal(changes, tc.wantRefusals) {
				t.Errorf("refused %v (%q), want %v", changes, messages, tc.wantRefusals)
			}
			if tc.wantMessage != "" && !slices.ContainsFunc(messages, func(m string) bool { return strings.Contains(m, tc.wantMessage) }) {
				t.Errorf("refusals %q, want one containing %q", messages, tc.wantMessage)
			}
		})
	}
}
