package unixsocket_test

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/contivpp/memif-agent/internal/unixsocket"
)

func TestRemoveIfSame(t *testing.T) {
	for _, tc := range []struct {
		name string
		// after makes what is at path when RemoveIfSame runs, given the
		// socket the caller made there.
		after       func(t *testing.T, path string)
		wantRemoved bool // the file at path is gone afterwards
	}{
		{"our socket", func(*testing.T, string) {}, true},
		{"a newer socket at the same path", func(t *testing.T, path string) {
			remove(t, path)
			listen(t, path)
		}, false},
		{"nothing there", func(t *testing.T, path string) { remove(t, path) }, true},
		{"a regular file", func(t *testing.T, path string) {
			remove(t, path)
			if err := os.WriteFile(path, []byte("keep me"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "agent.sock")
			listen(t, path)
			own, err := unixsocket.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			tc.after(t, path)
			if err := unixsocket.RemoveIfSame(path, own); err != nil {
				t.Fatalf("RemoveIfSame: %v", err)
			}
			_, err = os.Lstat(path)
			if removed := os.IsNotExist(err); removed != tc.wantRemoved {
				t.Errorf("removed = %v, want %v", removed, tc.wantRemoved)
			}
		})
	}
}

func TestRemoveIfSameWithoutASocketRemovesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.sock")
	listen(t, path)
	if err := unixsocket.RemoveIfSame(path, unixsocket.ID{}); err != nil {
		t.Fatal(err)
	}
	if _, err := unixsocket.Stat(path); err != nil {
		t.Errorf("the socket after RemoveIfSame with the zero ID: %v", err)
	}
}

func TestStatNamesWhatIsNotASocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := unixsocket.Stat(path); err == nil || err.Error() != path+" is not a socket (mode -rw-------)" {
		t.Errorf("Stat of a regular file = %v, want it named as not a socket", err)
	}
}

// listen makes a socket at path that outlives its listener, as a server's
// does until it removes it.
func listen(t *testing.T, path string) {
	t.Helper()
	listener, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	listener.SetUnlinkOnClose(false)
	t.Cleanup(func() { listener.Close() })
}

func remove(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}
