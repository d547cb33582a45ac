package soak

import (
	"strings"
	"testing"
	"time"
)

// TestSettledSince: the settled time since a moment leaves out the faults'
// windows in it, the one under way included.
func TestSettledSince(t *testing.T) {
	now := time.Now()
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	tests := []struct {
		name    string
		windows []window
		active  time.Duration // the fault under way began this long ago; 0: none
		since   time.Duration
		want    time.Duration
	}{
		{name: "no fault", since: time.Minute, want: time.Minute},
		{name: "a window inside", windows: []window{{start: ago(50 * time.Second), end: ago(30 * time.Second)}}, since: time.Minute, want: 40 * time.Second},
		{name: "a window across the start", windows: []window{{start: ago(2 * time.Minute), end: ago(50 * time.Second)}}, since: time.Minute, want: 50 * time.Second},
		{name: "a window before", windows: []window{{start: ago(3 * time.Minute), end: ago(2 * time.Minute)}}, since: time.Minute, want: time.Minute},
		{name: "a fault under way", active: 20 * time.Second, since: time.Minute, want: 40 * time.Second},
		{name: "under way since before", active: 2 * time.Minute, since: time.Minute, want: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &faultLog{windows: tc.windows}
			if tc.active > 0 {
				f.active, f.since = "fault", ago(tc.active)
			}
			if got := f.settledSince(ago(tc.since)); got < tc.want || got > tc.want+time.Second {
				t.Fatalf("settledSince = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestTrend: an upward trend is the last third's lowest above the first
// third's highest times the factor plus the slack; noise and a fall are
// none.
func TestTrend(t *testing.T) {
	series := func(values ...int) []sample {
		var samples []sample
		for _, v := range values {
			samples = append(samples, sample{rssKiB: v})
		}
		return samples
	}
	rss := func(s sample) float64 { return float64(s.rssKiB) }
	tests := []struct {
		name    string
		samples []sample
		want    string
	}{
		{name: "flat with noise", samples: series(100, 120, 90, 110, 100, 115, 95, 105, 100, 118, 92, 108)},
		{name: "rising", samples: series(100, 105, 110, 115, 150, 160, 170, 180, 200, 210, 220, 230), want: "rose"},
		{name: "falling", samples: series(230, 220, 210, 200, 180, 170, 160, 150, 115, 110, 105, 100)},
		{name: "too few samples", samples: series(100, 200, 300)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := trend(tc.samples, rss, 1.25, 10)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Fatalf("trend = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestShowMemifSockets: the sockets' file names of `show memif` (VPP
// 26.10), listener or not.
func TestShowMemifSockets(t *testing.T) {
	const out = `sockets
  id  listener    filename
  0   no          /run/vpp/memif.sock
  1   yes (2)     /var/run/contiv/memif/a1/memif.sock
  2   yes (0)     /var/run/contiv/memif/b2/memif.sock

interface memif1/0
  socket-id 1 id 0 mode ip
`
	var got []string
	for _, m := range memifSocket.FindAllStringSubmatch(out, -1) {
		got = append(got, m[1])
	}
	want := []string{"/run/vpp/memif.sock", "/var/run/contiv/memif/a1/memif.sock", "/var/run/contiv/memif/b2/memif.sock"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("sockets %v, want %v", got, want)
	}
}
