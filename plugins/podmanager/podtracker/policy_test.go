package podtracker

import (
	"testing"
	"time"
)

func TestGoneAfter(t *testing.T) {
	const grace = 2 * time.Second
	tests := []struct {
		name        string
		sources     answered
		wantDecides bool
		wantAfter   time.Duration
	}{
		{name: "runtime and kubelet answer", sources: answered{runtime: true, kubelet: true, kubeletConfigured: true}, wantDecides: true},
		{name: "runtime alone, no kubelet configured", sources: answered{runtime: true}, wantDecides: true},
		{name: "runtime answers, kubelet does not", sources: answered{runtime: true, kubeletConfigured: true}},
		{name: "kubelet alone: its gap after a restart", sources: answered{kubelet: true, kubeletConfigured: true}, wantDecides: true, wantAfter: grace},
		{name: "neither answers", sources: answered{kubeletConfigured: true}},
		{name: "runtime down, no kubelet configured", sources: answered{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			after, decides := goneAfter(tc.sources, grace)
			if decides != tc.wantDecides || after != tc.wantAfter {
				t.Errorf("goneAfter(%+v) = %s, %t; want %s, %t", tc.sources, after, decides, tc.wantAfter, tc.wantDecides)
			}
		})
	}
}
