package checkpoint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBoot(t *testing.T) {
	for _, tc := range []struct {
		name    string
		setup   func(t *testing.T, path string)
		want    string
		wantErr string
	}{
		{"no checkpoint directory", func(*testing.T, string) {}, "", ""},
		{"never marked", func(t *testing.T, path string) {
			if err := NewWriter(path).Save(Data{}); err != nil {
				t.Fatal(err)
			}
		}, "", ""},
		{"marked", func(t *testing.T, path string) {
			if err := NewWriter(path).MarkBoot("3c1e2b8f-boot"); err != nil {
				t.Fatal(err)
			}
		}, "3c1e2b8f-boot", ""},
		{"not a boot ID", func(t *testing.T, path string) {
			if err := NewWriter(path).MarkBoot(strings.Repeat("x", 100)); err != nil {
				t.Fatal(err)
			}
		}, "", "larger than 64 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state", "checkpoint.json")
			tc.setup(t, path)
			got, err := Boot(path)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("Boot = %q, %v; want an error containing %q", got, err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("Boot = %q, want %q", got, tc.want)
			}
			if info, err := os.Stat(path + ".boot"); err == nil && info.Mode().Perm() != fileMode {
				t.Errorf("boot file mode %v, want %v", info.Mode().Perm(), os.FileMode(fileMode))
			}
		})
	}
}
