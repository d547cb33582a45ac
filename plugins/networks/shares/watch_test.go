package shares

import (
	"net/netip"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestHeldBy(t *testing.T) {
	lease := func(network, holder, share string) *coordinationv1.Lease {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{LabelNetwork: network},
			Annotations: map[string]string{AnnotationShare: share}}}
		if holder != "" {
			l.Spec.HolderIdentity = ptr.To(holder)
		}
		return l
	}
	prefix := netip.MustParsePrefix
	for _, tc := range []struct {
		name   string
		leases []*coordinationv1.Lease
		want   Held
	}{
		{"none", nil, Held{}},
		{"two networks", []*coordinationv1.Lease{lease("red", "a", "10.70.0.0/26"), lease("red", "b", "10.70.0.64/26"), lease("v6", "a", "fd00::/122")},
			Held{"red": {"a": prefix("10.70.0.0/26"), "b": prefix("10.70.0.64/26")}, "v6": {"a": prefix("fd00::/122")}}},
		{"no holder", []*coordinationv1.Lease{lease("red", "", "10.70.0.0/26")}, Held{}},
		{"no share", []*coordinationv1.Lease{lease("red", "a", "")}, Held{}},
		{"no network", []*coordinationv1.Lease{lease("", "a", "10.70.0.0/26")}, Held{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := heldBy(tc.leases); !got.Equal(tc.want) {
				t.Fatalf("heldBy = %v, want %v", got, tc.want)
			}
		})
	}
}
