package memifnode

import (
	"slices"
	"testing"
)

func TestTracedMessagesAndReads(t *testing.T) {
	dump := `vl_api_sockclnt_create_t:
name: memif-agent
vl_api_memif_dump_t:
vl_api_sw_interface_get_table_t:
sw_if_index: 3
vl_api_control_ping_t:
vl_api_memif_create_v2_t:
role: MEMIF_ROLE_API_MASTER
vl_api_sw_interface_set_rx_mode_t:
vl_api_want_interface_events_t:
vl_api_get_first_msg_id_t:
vl_api_ip_route_add_del_t:
vl_api_cli_inband_t:
vl_api_cli_inband_t:
  cmd: show interface memif1/0 memif2/0
vl_api_cli_inband_t:
  cmd: set interface state memif1/0 down
`
	names := tracedMessages(dump)
	want := []string{"sockclnt_create", "memif_dump", "sw_interface_get_table", "control_ping", "memif_create_v2",
		"sw_interface_set_rx_mode", "want_interface_events", "get_first_msg_id", "ip_route_add_del", "cli_inband",
		`cli_inband "show interface memif1/0 memif2/0"`, `cli_inband "set interface state memif1/0 down"`}
	if !slices.Equal(names, want) {
		t.Fatalf("tracedMessages = %v, want %v", names, want)
	}
	var changes []string
	for _, name := range names {
		if !isRead(name) {
			changes = append(changes, name)
		}
	}
	if wantChanges := []string{"memif_create_v2", "sw_interface_set_rx_mode", "ip_route_add_del", "cli_inband", `cli_inband "set interface state memif1/0 down"`}; !slices.Equal(changes, wantChanges) {
		t.Errorf("changes = %v, want %v", changes, wantChanges)
	}
}

func TestParseRxPlacement(t *testing.T) {
	out := "Thread 0 (vpp_main):\n node memif-input:\n    memif1/0 queue 0 (interrupt)\n    memif2/0 queue 0 (adaptive)\n    memif2/0 queue 1 (polling)\n"
	tests := []struct {
		name string
		want []string
	}{
		{"memif1/0", []string{"interrupt"}},
		{"memif2/0", []string{"adaptive", "polling"}},
		{"memif3/0", nil},
	}
	for _, tc := range tests {
		if got := parseRxPlacement(out, tc.name); !slices.Equal(got, tc.want) {
			t.Errorf("parseRxPlacement(%s) = %v, want %v", tc.name, got, tc.want)
		}
	}
}
