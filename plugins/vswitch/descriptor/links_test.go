package descriptor

import (
	"maps"
	"testing"
)

// showMemif is show memif's section of one interface down, with reason as
// VPP printed it.
func showMemif(name, reason string) string {
	return "interface " + name + `
  socket-id 286 id 0 mode ethernet
  flags admin-up
  listener-fd 17 conn-fd 0
  num-s2m-rings 0 num-m2s-rings 0 buffer-size 0 num-regions 0
` + reason + "\n"
}

func TestParseDownReasons(t *testing.T) {
	cases := []struct {
		name string
		show string
		want map[string]string
	}{
		{"a wrong secret", showMemif("memif1/0", `  local-disc-reason "incorrect secret"`),
			map[string]string{"memif1/0": "incorrect secret"}},
		// VPP prints the reason's vector up to the next NUL in memory.
		{"a wrong secret with a stray letter after it", showMemif("memif1/0", `  local-disc-reason "incorrect secretC"`),
			map[string]string{"memif1/0": "incorrect secret"}},
		{"a wrong secret with a stray sign after it", showMemif("memif1/0", `  local-disc-reason "incorrect secret#"`),
			map[string]string{"memif1/0": "incorrect secret"}},
		{"a wrong secret with stray bytes after it", showMemif("memif1/0", "  local-disc-reason \"incorrect secretAb\x01\xfe\""),
			map[string]string{"memif1/0": "incorrect secret"}},
		{"no secret given", showMemif("memif1/0", `  local-disc-reason "secret requiredz"`),
			map[string]string{"memif1/0": "secret required"}},
		{"the pod side's own reason", showMemif("memif1/0", `  remote-disc-reason "testpmd stopped%"`),
			map[string]string{"memif1/0": "the pod side said: testpmd stopped"}},
		{"the pod side's reason with bytes that do not print", showMemif("memif1/0", "  remote-disc-reason \"bye\x02\x03\""),
			map[string]string{"memif1/0": "the pod side said: bye"}},
		{"each interface its own, the first reason of each", showMemif("memif1/0", `  local-disc-reason "incorrect secretX"`) +
			showMemif("memif2/0", "  local-disc-reason \"mode mismatch\"\n  remote-disc-reason \"other\"") +
			showMemif("memif3/0", ""),
			map[string]string{"memif1/0": "incorrect secret", "memif2/0": "mode mismatch"}},
		{"nothing", "", map[string]string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseDownReasons(tc.show); !maps.Equal(got, tc.want) {
				t.Errorf("parseDownReasons = %q, want %q", got, tc.want)
			}
		})
	}
}
