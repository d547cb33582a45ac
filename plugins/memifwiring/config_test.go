package memifwiring

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/contivpp/memif-agent/internal/configfile"
	"github.com/contivpp/memif-agent/plugins/memifwiring/wiring"
)

func TestExampleConfigIsValid(t *testing.T) {
	var cfg wiring.Config
	if err := configfile.Load("memifwiring.conf", &cfg); err != nil {
		t.Fatalf("memifwiring.conf: %v", err)
	}
	if cfg.MTU != 9000 || cfg.RxMode != "polling" || len(cfg.IPAddresses) != 0 {
		t.Errorf("memifwiring.conf = %+v, want MTU 9000, polling and no address (networks.conf's default network excludes them)", cfg)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name, content, wantErr string
	}{
		{"empty file", "", ""},
		{"misspelt key", "mtuu: 9000\n", `config key "mtuu": unknown key`},
		{"negative MTU", "mtu: -1\n", `config key "mtu": want a whole number from 0 to 4294967295, got -1`},
		{"addresses not a list", "ip-addresses: {a/b/c: 10.0.0.1/24}\n", `config key "ip-addresses": want a list`},
		{"bad rx mode", "rx-mode: fast\n", `config key "rx-mode": must be polling, interrupt, adaptive or empty, got "fast"`},
		{"address key not a container", "ip-addresses: {default/pod: [10.0.0.1/24]}\n", `config key "ip-addresses": must be keyed by namespace/pod/container, got "default/pod"`},
		{"address without prefix", "ip-addresses: {default/pod/app: [10.0.0.1]}\n", `config key "ip-addresses": entry "10.0.0.1" of default/pod/app must be an address with prefix length`},
		{"not YAML", "mtu: [\n", "not valid YAML"},
		{"bridge domain name too long", "bridge-domain: " + strings.Repeat("b", 64) + "\n", `config key "bridge-domain": must be at most 51 characters`},
		{"bridge domain with addresses", "bridge-domain: pods\nip-addresses: {a/b/c: [10.0.0.1/24]}\n", `config key "bridge-domain": excludes ip-addresses`},
		{"cross-connect pairs", "l2-xconnect:\n  - [default/sender/app, default/receiver/app]\n  - [default/chain/app/1, default/sink/app]\n", ""},
		{"cross-connect pairs not lists", "l2-xconnect: [default/sender/app, default/receiver/app]\n", `config key "l2-xconnect": want a list, got a string`},
		{"cross-connect of one memif", "l2-xconnect: [[default/sender/app]]\n", `config key "l2-xconnect": entry 1 must be a pair of two memifs, got 1`},
		{"cross-connect with a bridge domain", "bridge-domain: pods\nl2-xconnect: [[default/a/app, default/b/app]]\n", `config key "l2-xconnect": excludes bridge-domain`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cfg wiring.Config
			err := configfile.Decode([]byte(tc.content), &cfg)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("Decode(%q) = %v, want error containing %q", tc.content, err, tc.wantErr)
			}
		})
	}
}

// TestConfigReportsEveryProblem: a file with several bad values gets one
// *configfile.KeyError for each, not only the first.
func TestConfigReportsEveryProblem(t *testing.T) {
	content := "bridge-domain: pods\nrx-mode: fast\nl2-xconnect: [[default/a/app, default/b], [default/c/app, default/c/app/0]]\n"
	var cfg wiring.Config
	err := configfile.Decode([]byte(content), &cfg)
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		t.Fatalf("Decode(%q) = %v, want every problem joined", content, err)
	}
	var keys []string
	for _, problem := range joined.Unwrap() {
		var keyErr *configfile.KeyError
		if !errors.As(problem, &keyErr) {
			t.Fatalf("problem %v is not a *configfile.KeyError", problem)
		}
		keys = append(keys, keyErr.Key)
	}
	slices.Sort(keys)
	if want := []string{"l2-xconnect", "l2-xconnect", "l2-xconnect", "rx-mode"}; !slices.Equal(keys, want) {
		t.Errorf("Decode(%q) reported %v (%v), want problems with %v", content, keys, err, want)
	}
}
