package memifjson

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/contivpp/memif-agent/internal/securedir"
)

// issueExample is the memif.json of the issue, with a second memif.
const issueExample = `{
  "interfaces": [
    {
      "memif-id": 0,
      "socket": "/run/vpp/memif.sock",
      "network": "red",
      "mode": "ip",
      "ips": [
        "10.70.0.2/24"
      ],
      "gateway": [
        "10.70.0.1"
      ],
      "queues": 2,
      "ring-size": 1024,
      "buffer-size": 2048,
      "mtu": 9000
    },
    {
      "memif-id": 1,
      "socket": "/run/vpp/memif.sock",
      "network": "lab",
      "mode": "ethernet",
      "mac": "02:fe:00:00:00:01",
      "queues": 1,
      "ring-size": 1024,
      "buffer-size": 2048
    }
  ]
}
`

func TestRender(t *testing.T) {
	red := Interface{MemifID: 0, Socket: "/run/vpp/memif.sock", Network: "red", Mode: "ip",
		IPs: []netip.Prefix{netip.MustParsePrefix("10.70.0.2/24")}, Gateway: []netip.Addr{netip.MustParseAddr("10.70.0.1")},
		Queues: 2, RingSize: 1024, BufferSize: 2048, MTU: 9000}
	lab := Interface{MemifID: 1, Socket: "/run/vpp/memif.sock", Network: "lab", Mode: "ethernet", MAC: "02:fe:00:00:00:01",
		Queues: 1, RingSize: 1024, BufferSize: 2048}
	for _, tc := range []struct {
		name       string
		interfaces []Interface
		want       string
		wantErr    string
	}{
		{name: "the issue's example, ordered by memif ID", interfaces: []Interface{lab, red}, want: issueExample},
		{name: "none", want: "{\n  \"interfaces\": []\n}\n"},
		{name: "one memif ID twice", interfaces: []Interface{red, red}, wantErr: "memif ID 0 is listed twice"},
		{name: "no mode", interfaces: []Interface{{MemifID: 3}}, wantErr: `memif 3 has mode ""`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Render(tc.interfaces)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Render = %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("Render = %s, %v; want %s", got, err, tc.want)
			}
			if strings.Contains(strings.ToLower(string(got)), "secret") {
				t.Errorf("memif.json mentions a secret: %s", got)
			}
		})
	}
}

// allocationDir makes a directory shaped like an allocation's (mode 0770,
// a group the pod reads it by) and opens it as the device manager would.
func allocationDir(t *testing.T) (*securedir.Dir, string) {
	t.Helper()
	root := t.TempDir()
	path := filepath.Join(root, "memif-000-abc")
	if err := os.Mkdir(path, 0o770); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, -1, 4242); err != nil {
		t.Skipf("changing a directory's group needs root: %v", err)
	}
	rootDir, err := securedir.Open(root, securedir.Options{Group: securedir.NoGroup})
	if err != nil {
		t.Fatal(err)
	}
	defer rootDir.Close()
	dir, err := rootDir.OpenDir("memif-000-abc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dir.Close() })
	return dir, path
}

// wantOnly fails t unless path's directory holds exactly names.
func wantOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, entry := range entries {
		got = append(got, entry.Name())
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Errorf("directory holds %v, want %v", got, names)
	}
}

func TestWrite(t *testing.T) {
	for _, tc := range []struct {
		name string
		// plant prepares the directory as a pod might have.
		plant   func(t *testing.T, path string)
		wantErr string
	}{
		{name: "fresh", plant: func(*testing.T, string) {}},
		{name: "over an older file", plant: func(t *testing.T, path string) {
			if err := os.WriteFile(filepath.Join(path, FileName), []byte("{}"), 0o666); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "over a link the pod planted", plant: func(t *testing.T, path string) {
			target := filepath.Join(t.TempDir(), "target")
			if err := os.WriteFile(target, []byte("untouched"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, filepath.Join(path, FileName)); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if content, _ := os.ReadFile(target); string(content) != "untouched" {
					t.Errorf("the link's target now holds %q", content)
				}
			})
		}},
		{name: "over a directory the pod planted", plant: func(t *testing.T, path string) {
			if err := os.Mkdir(filepath.Join(path, FileName), 0o700); err != nil {
				t.Fatal(err)
			}
		}, wantErr: "rename"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, path := allocationDir(t)
			tc.plant(t, path)
			err := Write(dir, []byte(issueExample))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), path) {
					t.Fatalf("Write = %v, want an error naming %s and containing %q", err, path, tc.wantErr)
				}
				wantOnly(t, path, FileName)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			wantOnly(t, path, FileName)
			info, err := os.Lstat(filepath.Join(path, FileName))
			if err != nil {
				t.Fatal(err)
			}
			if !info.Mode().IsRegular() || info.Mode().Perm() != FileMode || info.Sys().(*syscall.Stat_t).Gid != 4242 {
				t.Errorf("memif.json is %v, gid %d; want a regular file, mode 0640, gid 4242", info.Mode(), info.Sys().(*syscall.Stat_t).Gid)
			}
			if content, _ := os.ReadFile(filepath.Join(path, FileName)); string(content) != issueExample {
				t.Errorf("memif.json holds %s", content)
			}
		})
	}
}
