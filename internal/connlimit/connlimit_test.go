package connlimit

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// TestTheConnectionClosedToMakeRoom: at the limit, the connection closed
// is one not being served, from the source holding the most, silent
// before one that has spoken, the oldest first; the new one itself when
// every other is being served.
func TestTheConnectionClosedToMakeRoom(t *testing.T) {
	type held struct {
		name          string
		source        string
		served, spoke bool
	}
	cases := []struct {
		name string
		// open are the connections held, oldest first; the last arrives
		// at the limit, len(open)-1.
		open []held
		want string
	}{
		{
			name: "the oldest of one source",
			open: []held{{name: "a1", source: "10.0.0.1"}, {name: "a2", source: "10.0.0.1"}, {name: "new", source: "10.0.0.1"}},
			want: "a1",
		},
		{
			name: "silent before spoken, though younger",
			open: []held{{name: "a1", source: "10.0.0.1", spoke: true}, {name: "a2", source: "10.0.0.1"}, {name: "new", source: "10.0.0.1"}},
			want: "a2",
		},
		{
			name: "the new one when it alone is silent",
			open: []held{{name: "a1", source: "10.0.0.1", spoke: true}, {name: "a2", source: "10.0.0.1", spoke: true}, {name: "new", source: "10.0.0.1"}},
			want: "new",
		},
		{
			name: "the oldest spoken when every one has spoken",
			open: []held{{name: "a1", source: "10.0.0.1", spoke: true}, {name: "a2", source: "10.0.0.1", spoke: true}, {name: "new", source: "10.0.0.1", spoke: true}},
			want: "a1",
		},
		{
			name: "the source holding the most, though its own have spoken",
			open: []held{
				{name: "b1", source: "10.0.0.2"},
				{name: "a1", source: "10.0.0.1", spoke: true}, {name: "a2", source: "10.0.0.1", spoke: true},
				{name: "new", source: "10.0.0.3"},
			},
			want: "a1",
		},
		{
			name: "the flood's source, not the newcomer's from elsewhere",
			open: []held{
				{name: "a1", source: "10.0.0.1"}, {name: "a2", source: "10.0.0.1"},
				{name: "new", source: "10.0.0.2"},
			},
			want: "a1",
		},
		{
			name: "never one being served",
			open: []held{
				{name: "a1", source: "10.0.0.1", served: true}, {name: "a2", source: "10.0.0.1", served: true},
				{name: "b1", source: "10.0.0.2", spoke: true},
				{name: "new", source: "10.0.0.3", spoke: true},
			},
			want: "b1",
		},
		{
			name: "the new one when every other is being served",
			open: []held{{name: "a1", source: "10.0.0.1", served: true}, {name: "a2", source: "10.0.0.1", served: true}, {name: "new", source: "10.0.0.2", spoke: true}},
			want: "new",
		},
		{
			name: "clients of unknown source are one source",
			open: []held{{name: "u1", spoke: true}, {name: "u2"}, {name: "new"}},
			want: "u2",
		},
		{
			name: "a Unix socket's flooding user, not the newcomer of another",
			open: []held{
				{name: "p1", source: "uid 0", spoke: true},
				{name: "f1", source: "uid 65534", spoke: true}, {name: "f2", source: "uid 65534", spoke: true},
				{name: "f3", source: "uid 65534", spoke: true},
				{name: "new", source: "uid 0"},
			},
			want: "f1",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := newListener(nil, len(tc.open)-1)
			names := map[*conn]string{}
			var victim *conn
			for _, h := range tc.open {
				// No socket: spoke alone says whether it has spoken.
				c := &conn{served: h.served}
				c.source = source(h.source)
				c.spoke.Store(h.spoke)
				names[c] = h.name
				victim = l.admit(c)
			}
			if victim == nil || names[victim] != tc.want {
				t.Fatalf("closed %q to make room, want %q", names[victim], tc.want)
			}
			if len(l.open) != l.limit {
				t.Errorf("%d connections counted after making room, want the limit, %d", len(l.open), l.limit)
			}
		})
	}
}

// TestTrackSeesThroughTLS: an HTTPS server hands ConnState the TLS
// connection over the accepted one; that one is marked served.
func TestTrackSeesThroughTLS(t *testing.T) {
	l := newListener(nil, 1)
	c := &conn{}
	l.admit(c)
	l.track(tls.Server(c, &tls.Config{}), http.StateActive)
	if !c.served {
		t.Fatal("a connection active under TLS is not marked served")
	}
	l.track(tls.Server(c, &tls.Config{}), http.StateClosed)
	if len(l.open) != 0 || len(l.bySource) != 0 {
		t.Errorf("a connection closed under TLS is still counted: %d open, %d sources", len(l.open), len(l.bySource))
	}
}

// TestUnixClientsAreTheirUser: a Unix socket's client counts as its
// user, whatever process it is.
func TestUnixClientsAreTheirUser(t *testing.T) {
	listener, err := net.Listen("unix", filepath.Join(t.TempDir(), "s.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close()
	client, err := net.Dial("unix", listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	accepted, err := listener.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer accepted.Close()
	if got, want := sourceOf(accepted), source(fmt.Sprintf("uid %d", os.Getuid())); got != want {
		t.Errorf("source of a Unix socket client = %q, want %q", got, want)
	}
}
