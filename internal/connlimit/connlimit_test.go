package connlimit

import (
	"crypto/tls"
	"net/http"
	"net/netip"
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
			name: "Unix socket clients are one source",
			open: []held{{name: "u1", spoke: true}, {name: "u2"}, {name: "new"}},
			want: "u2",
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
				if h.source != "" {
					c.source = netip.MustParseAddr(h.source)
				}
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
