package descriptor

import (
	"testing"
)

func TestParseCounters(t *testing.T) {
	cases := []struct {
		name string
		show string
		want map[string]Counters
	}{
		{"counted and idle interfaces", `              Name               Idx    State  MTU (L3/IP4/IP6/MPLS)     Counter          Count     
local0                            0     down          0/0/0/0       
memif1/0                          1      up          9000/0/0/0     rx packets                400672
                                                                    rx bytes                25643008
                                                                    tx packets                    12
                                                                    tx bytes                     840
                                                                    drops                     400660
                                                                    punt                      400672
memif1/1                          2      up          9000/0/0/0     
`, map[string]Counters{
			"local0":   {},
			"memif1/0": {RxPackets: 400672, RxBytes: 25643008, TxPackets: 12, TxBytes: 840, Drops: 400660},
			"memif1/1": {},
		}},
		{"an unknown interface", "show interface: unknown input `memif9/9'\n", map[string]Counters{}},
		{"nothing", "", map[string]Counters{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := parseCounters(tc.show)
			if len(got) != len(tc.want) {
				t.Fatalf("parseCounters = %+v, want %+v", got, tc.want)
			}
			for name, want := range tc.want {
				if got[name] != want {
					t.Errorf("%s: %+v, want %+v", name, got[name], want)
				}
			}
		})
	}
}
