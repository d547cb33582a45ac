package unixsocket_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
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
		{"our socket with its mode and owner changed", func(t *testing.T, path string) {
			if err := os.Chmod(path, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(path, 0, 0); err != nil && !errors.Is(err, fs.ErrPermission) {
				t.Fatal(err)
			}
		}, true},
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

func TestDialReachesOnlyTheSocketAsked(t *testing.T) {
	for _, tc := range []struct {
		name string
		// before runs once the caller took the socket's ID, during runs
		// inside Dial, after its first look at the path and before it
		// connects; each may replace the socket with newer (nil: none).
		before, during func(t *testing.T, path string) *server
		// want is the error Dial returns; nil: it connects.
		want error
	}{
		{"the same socket", nil, nil, nil},
		{"a newer socket before Dial", replace, nil, unixsocket.ErrReplaced},
		{"a newer socket while Dial connects", nil, replace, unixsocket.ErrReplaced},
		{"nothing there", func(t *testing.T, path string) *server { remove(t, path); return nil }, nil, fs.ErrNotExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "kubelet.sock")
			serve(t, path)
			own, err := unixsocket.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			var newer *server
			if tc.before != nil {
				newer = tc.before(t, path)
			}
			if tc.during != nil {
				unixsocket.SetBeforeConnect(t, func() { newer = tc.during(t, path) })
			}
			conn, err := unixsocket.Dial(context.Background(), path, own)
			if conn != nil {
				conn.Close()
			}
			if tc.want == nil && err != nil || !errors.Is(err, tc.want) {
				t.Errorf("Dial = %v, want %v", err, tc.want)
			}
			if tc.want != nil && conn != nil {
				t.Error("Dial returned a connection with its error")
			}
			if newer == nil {
				return
			}
			for _, sent := range newer.stop() {
				if sent != 0 {
					t.Errorf("the newer socket received %d bytes, want none", sent)
				}
			}
		})
	}
}

// replace removes the socket at path and serves a newer one there.
func replace(t *testing.T, path string) *server {
	remove(t, path)
	return serve(t, path)
}

// server accepts connections on a socket and reads them until they close.
type server struct {
	listener net.Listener
	done     chan struct{}
	sent     []int // bytes received on each connection, once done
}

// serve makes a listening socket at path, stopped at the test's end.
func serve(t *testing.T, path string) *server {
	t.Helper()
	listener, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	s := &server{listener: listener, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			n, _ := io.Copy(io.Discard, conn)
			conn.Close()
			s.sent = append(s.sent, int(n))
		}
	}()
	t.Cleanup(func() { s.stop() })
	return s
}

// stop closes the listener and returns the bytes each connection sent.
func (s *server) stop() []int {
	s.listener.Close()
	<-s.done
	return s.sent
}

// listen makes a socket that outlives its listener, as a server's does
// until it removes it.
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
