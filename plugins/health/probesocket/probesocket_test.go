package probesocket_test

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contivpp/memif-agent/plugins/health/probesocket"
	"github.com/contivpp/memif-agent/test/kit/connflood"
)

func TestMain(m *testing.M) {
	connflood.RunIfAsked()
	os.Exit(m.Run())
}

// serve serves handler on a socket in a directory Serve creates.
func serve(t *testing.T, handler http.Handler) *probesocket.Server {
	t.Helper()
	server, err := probesocket.Serve(filepath.Join(t.TempDir(), "run", "probe.sock"), handler)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	return server
}

func ask(t *testing.T, socket, urlPath string) (probesocket.Answer, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return probesocket.Ask(ctx, socket, urlPath)
}

func TestAskReturnsWhatTheProbeAnswered(t *testing.T) {
	probes := http.NewServeMux()
	probes.HandleFunc("GET /liveness", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(`{"state":"ERROR"}`)) })
	probes.HandleFunc("GET /readiness", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `{"state":"ERROR"}`, http.StatusServiceUnavailable)
	})
	server := serve(t, probes)
	cases := []struct {
		path       string
		wantPassed bool
	}{
		{"/liveness", true},
		{"/readiness", false},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			answer, err := ask(t, server.Path(), tc.path)
			if err != nil {
				t.Fatal(err)
			}
			if answer.Passed() != tc.wantPassed || !strings.Contains(string(answer.Body), `"state":"ERROR"`) {
				t.Errorf("answer %d %q, want passed=%v with the agent's state", answer.Code, answer.Body, tc.wantPassed)
			}
		})
	}
}

// TestSocketLetsOnlyItsOwnerIn: the socket is 0600 and the directory
// Serve made for it 0700, both the agent's user's.
func TestSocketLetsOnlyItsOwnerIn(t *testing.T) {
	server := serve(t, http.NotFoundHandler())
	for path, want := range map[string]fs.FileMode{
		server.Path():               fs.ModeSocket | 0o600,
		filepath.Dir(server.Path()): fs.ModeDir | 0o700,
	} {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode() != want {
			t.Errorf("%s has mode %v, want %v", path, info.Mode(), want)
		}
	}
}

func TestCloseRemovesTheSocketAndAskSaysWhy(t *testing.T) {
	server := serve(t, http.NotFoundHandler())
	if err := server.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := ask(t, server.Path(), "/liveness")
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "no socket at "+server.Path()) {
		t.Errorf("Ask after Close: %v; want no socket at %s", err, server.Path())
	}
}

// TestAServerLeftBehindIsReplaced: a socket nothing listens on (an agent
// killed) is replaced; one that answers (an agent still running) is not.
func TestAServerLeftBehindIsReplaced(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, "stale.sock")
	listener, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	listener.(*net.UnixListener).SetUnlinkOnClose(false)
	listener.Close()
	if _, err := ask(t, stale, "/liveness"); err == nil || !strings.Contains(err.Error(), "nothing listens on the socket "+stale) {
		t.Errorf("Ask of a stale socket: %v; want nothing listens", err)
	}
	server, err := probesocket.Serve(stale, http.NotFoundHandler())
	if err != nil {
		t.Fatalf("Serve over a stale socket: %v", err)
	}
	defer server.Close()
	if _, err := probesocket.Serve(stale, http.NotFoundHandler()); err == nil || !strings.Contains(err.Error(), "in use by another process") {
		t.Errorf("a second Serve at %s: %v; want in use", stale, err)
	}
}

// The flood of TestProbesAnsweredDuringAFlood.
const (
	// floodConnections is how many connections root's stray client
	// holds: many times the socket's limit.
	floodConnections = 200
	// probesAsked is how many probes are asked during the flood, one
	// after another.
	probesAsked = 5
	// probeTimeout is the DaemonSet's timeoutSeconds: kubelet fails a
	// probe not answered within it.
	probeTimeout = 3 * time.Second
)

// TestProbesAnsweredDuringAFlood: while a client of root's holds 200
// connections to the probe socket (only root may connect), sending
// nothing and reopening each one the server closes, every probe is
// answered within kubelet's timeout. With the connections limited by
// making new ones wait (netutil.LimitListener), each probe waited in the
// kernel's accept queue behind the flood's connections, each cut off
// only after the header timeout, and kubelet would restart the agent.
func TestProbesAnsweredDuringAFlood(t *testing.T) {
	probes := http.NewServeMux()
	probes.HandleFunc("GET "+probesocket.LivenessPath, func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(`{"state":"OK"}`)) })
	server := serve(t, probes)
	flood := connflood.Start(t, connflood.Spec{Network: "unix", Address: server.Path(), Connections: floodConnections, AsRoot: true})
	passed := 0
	for i := range probesAsked {
		ctx, cancel := context.WithTimeout(t.Context(), probeTimeout)
		answer, err := probesocket.Ask(ctx, server.Path(), probesocket.LivenessPath)
		cancel()
		if err != nil || !answer.Passed() {
			t.Errorf("probe %d of %d during the flood: %+v, %v", i+1, probesAsked, answer, err)
			continue
		}
		passed++
	}
	t.Logf("%d of %d probes answered; the flood opened %d connections in all", passed, probesAsked, flood.Stop(t))
}
