package listener_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contivpp/memif-agent/internal/configfile"
	"github.com/contivpp/memif-agent/plugins/metrics/listener"
)

func TestLoad(t *testing.T) {
	cases := []struct {
		name       string
		file       string // "" : no metrics.conf
		podIP      string
		want       listener.Config
		wantSource listener.Source
		wantErr    []string // each in the error; nil: no error
	}{
		{name: "no file, no pod IP: loopback", want: listener.Config{Address: "127.0.0.1", Port: 9752}, wantSource: listener.FromFallback},
		{name: "no file: the pod IP", podIP: "10.0.0.5", want: listener.Config{Address: "10.0.0.5", Port: 9752}, wantSource: listener.FromEnv},
		{name: "no file: an IPv6 pod IP", podIP: "fd00::5", want: listener.Config{Address: "fd00::5", Port: 9752}, wantSource: listener.FromEnv},
		{name: "the file's address wins over the pod IP", file: "address: 0.0.0.0\n", podIP: "10.0.0.5",
			want: listener.Config{Address: "0.0.0.0", Port: 9752}, wantSource: listener.FromFile},
		{name: "the file's port, the pod IP", file: "port: 9900\n", podIP: "10.0.0.5",
			want: listener.Config{Address: "10.0.0.5", Port: 9900}, wantSource: listener.FromEnv},
		{name: "empty file", file: "# nothing\n", want: listener.Config{Address: "127.0.0.1", Port: 9752}, wantSource: listener.FromFallback},
		{name: "unknown key", file: "adress: 10.0.0.5\n", wantErr: []string{"metrics.conf", `"adress"`}},
		{name: "host name", file: "address: node-1.example\n", wantErr: []string{"address", "want an IP address", "node-1.example"}},
		{name: "address with a port", file: "address: 10.0.0.5:9752\n", wantErr: []string{"address", "no port"}},
		{name: "port zero", file: "port: 0\n", wantErr: []string{"port", "from 1 to 65535, got 0"}},
		{name: "port too large", file: "port: 70000\n", wantErr: []string{"port", "got 70000"}},
		{name: "port as a string", file: "port: \"9752\"\n", wantErr: []string{"port"}},
		{name: "both bad, both reported", file: "address: x\nport: -1\n", wantErr: []string{"address", "port"}},
		{name: "pod IP not an address", podIP: "$(POD_IP)", wantErr: []string{listener.AddressEnv, "$(POD_IP)", "status.podIP"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := ""
			if tc.file != "" {
				path = filepath.Join(t.TempDir(), "metrics.conf")
				if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got, source, err := listener.Load(path, tc.podIP)
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("Load = %+v, want an error saying %q", got, tc.wantErr)
				}
				for _, want := range tc.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not say %q", err, want)
					}
				}
				return
			}
			if err != nil || got != tc.want || source != tc.wantSource {
				t.Fatalf("Load = %+v from %q, %v; want %+v from %q", got, source, err, tc.want, tc.wantSource)
			}
		})
	}
}

// TestKeyErrors: each bad key is a *configfile.KeyError naming the key,
// as the agent's other config files report them.
func TestKeyErrors(t *testing.T) {
	err := listener.Config{Address: "x", Port: 0}.Validate()
	var keyErr *configfile.KeyError
	if !errors.As(err, &keyErr) || keyErr.Key != "address" {
		t.Fatalf("Validate = %v, want a *configfile.KeyError for address first", err)
	}
}

// TestTheExampleIsTheDefaults: metrics.conf in the plugin's directory
// decodes, and sets what the defaults are.
func TestTheExampleIsTheDefaults(t *testing.T) {
	got, source, err := listener.Load("../metrics.conf", "10.0.0.5")
	if err != nil || got != (listener.Config{Address: "10.0.0.5", Port: listener.DefaultPort}) || source != listener.FromEnv {
		t.Fatalf("the example metrics.conf: %+v from %q, %v; want the defaults", got, source, err)
	}
}
