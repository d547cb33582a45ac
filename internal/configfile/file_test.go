package configfile_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/contivpp/memif-agent/internal/configfile"
)

func TestFile(t *testing.T) {
	type config struct {
		Port int `json:"port"`
	}
	dir := t.TempDir()
	cases := []struct {
		name      string
		content   *string
		wantName  bool
		wantFound bool
		wantErr   bool
		wantPort  int
	}{
		{name: "missing: the defaults", wantPort: 7},
		{name: "present: decoded over the defaults", content: ptr("port: 9\n"), wantName: true, wantFound: true, wantPort: 9},
		{name: "unknown key refused", content: ptr("prot: 9\n"), wantName: true, wantErr: true, wantPort: 7},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name+".conf")
			if tc.content != nil {
				if err := os.WriteFile(path, []byte(*tc.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			file := configfile.File(path)
			if got := file.GetConfigName(); (got == path) != tc.wantName || (got != "" && got != path) {
				t.Errorf("GetConfigName() = %q, want the path: %v", got, tc.wantName)
			}
			cfg := config{Port: 7}
			found, err := file.LoadValue(&cfg)
			if found != tc.wantFound || (err != nil) != tc.wantErr || cfg.Port != tc.wantPort {
				t.Errorf("LoadValue = %v, %v, port %d; want %v, error %v, port %d", found, err, cfg.Port, tc.wantFound, tc.wantErr, tc.wantPort)
			}
		})
	}
}

func ptr(s string) *string { return &s }
