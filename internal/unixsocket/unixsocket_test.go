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
		// after changes what is at path once the caller took its ID.
		after func(t *testing.T, path string)
		// want is the error Dial returns; nil: it connects.
		want error
	}{
		{"the same socket", func(*testing.T, string) {}, nil},
		{"a newer socket listening at the same path", func(t *testing.T, path string) {
			remove(t, path)
			accepted := serve(t, path)
			t.Cleanup(func() {
				// Dial returned without a connection: the newer server
				// was never reached, or was left before a byte was sent.
				select {
				case n := <-accepted:
					if n != 0 {
						t.Errorf("the newer socket received %d bytes, want none", n)
					}
				default:
				}
			})
		}, unixsocket.ErrReplaced},
		{"nothing there", func(t *testing.T, path string) { remove(t, path) }, fs.ErrNotExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "kubelet.sock")
			serve(t, path)
			own, err := unixsocket.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			tc.after(t, path)
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
		})
	}
}

// serve makes a listening socket at path; accepted receives the number of
// bytes each accepted connection sent before it was closed.
func serve(t *testing.T, path string) <-chan int {
	t.Helper()
	listener, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan int, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			n, _ := io.Copy(io.Discard, conn)
			conn.Close()
			accepted <- int(n)
		}
	}()
	t.Cleanup(func() {
		listener.Close()
		<-done
	})
	return accepted
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
