package underlay

import (
	"net/netip"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPeersOf(t *testing.T) {
	node := func(name, annotation string) *v1.Node {
		n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if annotation != "" {
			n.Annotations = map[string]string{Annotation: annotation}
		}
		return n
	}
	addr := netip.MustParseAddr
	for _, tc := range []struct {
		name        string
		nodes       []*v1.Node
		want        map[string]netip.Addr
		wantInvalid map[string]string
	}{
		{"self left out", []*v1.Node{node("a", "192.168.0.1"), node("b", "192.168.0.2")},
			map[string]netip.Addr{"b": addr("192.168.0.2")}, map[string]string{}},
		{"not published", []*v1.Node{node("b", ""), node("c", "fd00::3")},
			map[string]netip.Addr{"c": addr("fd00::3")}, map[string]string{}},
		{"IPv4-mapped", []*v1.Node{node("b", "::ffff:192.168.0.2")},
			map[string]netip.Addr{"b": addr("192.168.0.2")}, map[string]string{}},
		{"not an address", []*v1.Node{node("b", "node-b.example"), node("c", "fe80::1%eth0")},
			map[string]netip.Addr{}, map[string]string{"b": `annotation memif.contivpp.io/underlay-address is "node-b.example", not an IP address`, "c": `annotation memif.contivpp.io/underlay-address is "fe80::1%eth0", not an IP address`}},
		{"one address twice", []*v1.Node{node("c", "192.168.0.2"), node("b", "192.168.0.2")},
			map[string]netip.Addr{"b": addr("192.168.0.2")}, map[string]string{"c": "annotation memif.contivpp.io/underlay-address is 192.168.0.2, node b's underlay address too"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := peersOf(tc.nodes, "a")
			if want := (Peers{Addresses: tc.want, Invalid: tc.wantInvalid}); !got.Equal(want) {
				t.Fatalf("peersOf = %+v, want %+v", got, want)
			}
		})
	}
}

func TestKeepAnnotation(t *testing.T) {
	full := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "b", ResourceVersion: "7", Labels: map[string]string{"x": "y"},
			Annotations: map[string]string{Annotation: "192.168.0.2", "other": "z"}},
		Status: v1.NodeStatus{Capacity: v1.ResourceList{}},
	}
	slim, err := keepAnnotation(full)
	if err != nil {
		t.Fatal(err)
	}
	node := slim.(*v1.Node)
	if node.Name != "b" || node.ResourceVersion != "7" || len(node.Labels) != 0 || len(node.Annotations) != 1 || node.Annotations[Annotation] != "192.168.0.2" || node.Status.Capacity != nil {
		t.Fatalf("keepAnnotation kept %+v", node)
	}
}
