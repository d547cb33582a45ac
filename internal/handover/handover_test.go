package handover_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contivpp/memif-agent/internal/handover"
	"github.com/contivpp/memif-agent/test/kit/testlog"
)

const (
	// successorUID and otherUID are pod UIDs as the API server makes them.
	successorUID = "0f8e2b6c-1d3a-4e5f-9a7b-2c4d6e8f0a1b"
	otherUID     = "7c1d9e3a-5b2f-4a8c-8d6e-0b9f1a2c3d4e"
	// waitTimeout bounds every wait; a failure deadline, not an asserted
	// duration.
	waitTimeout = 30 * time.Second
	// senderEnv makes the test binary a successor that asks for the node
	// and dies, its connection passed to the test (sendAndDie).
	senderEnv = "HANDOVER_TEST_SENDER"
)

func TestMain(m *testing.M) {
	if request := os.Getenv(senderEnv); request != "" {
		if err := sendAndDie(request); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// holder records what the server asked of it. With gate, HandOver waits
// until it is closed (or the handover's time is up) before it answers.
type holder struct {
	refuse error
	gate   chan struct{}
	asked  chan string
	ends   chan string
}

func newHolder(refuse error) *holder {
	return &holder{refuse: refuse, asked: make(chan string, 8), ends: make(chan string, 1)}
}

func (h *holder) HandOver(ctx context.Context, successorUID string) error {
	h.asked <- successorUID
	if h.gate != nil {
		select {
		case <-h.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return h.refuse
}
func (h *holder) SuccessorServing() { h.ends <- "serving" }
func (h *holder) SuccessorGone()    { h.ends <- "gone" }

// serve serves the handover socket in a fresh directory until the test
// ends; a zero RequestTimeout is the default.
func serve(t *testing.T, h *holder, requestTimeout time.Duration) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state", "checkpoint.json.lock.handover")
	server, err := handover.Serve(path, h, handover.Config{HandOverTimeout: time.Minute, RequestTimeout: requestTimeout}, testlog.New(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := server.Close(); err != nil {
			t.Error(err)
		}
	})
	return path
}

// dial connects to the handover socket, reads bounded by waitTimeout.
func dial(t *testing.T, path string) *net.UnixConn {
	t.Helper()
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if err := conn.SetReadDeadline(time.Now().Add(waitTimeout)); err != nil {
		t.Fatal(err)
	}
	return conn.(*net.UnixConn)
}

// answer is the holder's answer, a JSON line, as the protocol spells it.
type answer struct {
	Released bool   `json:"released"`
	Error    string `json:"error"`
}

// readAnswer reads the holder's answer on conn.
func readAnswer(t *testing.T, conn net.Conn) answer {
	t.Helper()
	line, err := bufio.NewReader(conn).ReadBytes('\n')
	if err != nil {
		t.Fatalf("no answer from the holder: %v", err)
	}
	var got answer
	if err := json.Unmarshal(line, &got); err != nil {
		t.Fatalf("answer %q: %v", line, err)
	}
	return got
}

// requestLine is a request for the node for the pod uid, as the
// protocol spells it.
func requestLine(uid string) []byte {
	line, _ := json.Marshal(map[string]string{"successor": uid})
	return append(line, '\n')
}

// notAsked fails the test if the holder was asked to hand over.
func notAsked(t *testing.T, h *holder) {
	t.Helper()
	select {
	case uid := <-h.asked:
		t.Errorf("the holder was asked to hand the node over to %q", uid)
	default:
	}
}

func TestHandover(t *testing.T) {
	for _, tc := range []struct {
		name string
		// refuse is the holder's HandOver error.
		refuse error
		// serving: the successor says it serves; else it closes.
		serving bool
		wantEnd string
	}{
		{name: "successor serves", serving: true, wantEnd: "serving"},
		{name: "successor exits before it serves", wantEnd: "gone"},
		{name: "holder refuses", refuse: errors.New("still starting")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHolder(tc.refuse)
			path := serve(t, h, 0)
			granted, err := handover.Request(t.Context(), path, successorUID)
			if got := <-h.asked; got != successorUID {
				t.Errorf("the holder was asked for %q, want %s", got, successorUID)
			}
			if tc.refuse != nil {
				if err == nil || granted != nil {
					t.Fatalf("Request = %v, %v; want the holder's refusal", granted, err)
				}
				if want := "keeps the node: still starting"; !strings.Contains(err.Error(), want) {
					t.Errorf("Request error %q does not say %q", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.serving {
				err = granted.Serving()
			} else {
				err = granted.Close()
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := <-h.ends; got != tc.wantEnd {
				t.Errorf("the holder heard %q, want %q", got, tc.wantEnd)
			}
			// The successor serves its own socket at the same path now.
			next, err := handover.Serve(path, newHolder(nil), handover.Config{HandOverTimeout: time.Minute}, testlog.New(t))
			if err != nil {
				t.Fatalf("the successor cannot serve the handover socket: %v", err)
			}
			if err := next.Close(); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestRequestWithoutHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "checkpoint.json.lock.handover")
	_, err := handover.Request(t.Context(), path, successorUID)
	if !errors.Is(err, handover.ErrNoHolder) {
		t.Fatalf("Request = %v, want ErrNoHolder", err)
	}
}

// TestSilentClientDelaysOnlyItself: a client that connects and says
// nothing, for longer than the successor waits for the node, does not keep
// the successor waiting (it once made a real successor give up and exit).
func TestSilentClientDelaysOnlyItself(t *testing.T) {
	h := newHolder(nil)
	path := serve(t, h, time.Hour)
	dial(t, path)
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	granted, err := handover.Request(ctx, path, successorUID)
	if err != nil {
		t.Fatalf("Request behind a silent client: %v; want the node", err)
	}
	defer granted.Close()
	if got := <-h.asked; got != successorUID {
		t.Errorf("the holder was asked for %q, want %s", got, successorUID)
	}
}

// TestSilentClientIsDropped: a client silent for the RequestTimeout is told
// why and dropped; the holder keeps the node.
func TestSilentClientIsDropped(t *testing.T) {
	h := newHolder(nil)
	path := serve(t, h, 100*time.Millisecond)
	conn := dial(t, path)
	got := readAnswer(t, conn)
	if want := "no handover request within 100ms"; got.Released || !strings.Contains(got.Error, want) {
		t.Errorf("the silent client was answered %+v, want an error saying %q", got, want)
	}
	if _, err := conn.Read(make([]byte, 1)); err == nil {
		t.Error("the silent client's connection is still open after the answer")
	}
	notAsked(t, h)
}

// TestSuccessorUIDRefused: the successor's pod UID names its kubelet
// sockets, so a UID that is not one is refused, named in the error, and
// the holder keeps the node (a UID with "../" once made it forward
// Allocate to another socket and close its listeners).
func TestSuccessorUIDRefused(t *testing.T) {
	refused := []struct {
		name, uid, want string
	}{
		{"none", "", "no pod UID"},
		{"a path up", "../../device-plugins/kubelet", "a path"},
		{"dot dot", "..", "a path"},
		{"a path separator", "0f8e2b6c/1d3a-4e5f-9a7b-2c4d6e8f0a1b", "a path"},
		{"a UID and a path", successorUID + "/../x", "a path"},
		{"a backslash", `0f8e2b6c\1d3a-4e5f-9a7b-2c4d6e8f0a1b`, "a path"},
		{"upper case", strings.ToUpper(successorUID), "not a Kubernetes pod UID"},
		{"not a UUID", "pod-b", "not a Kubernetes pod UID"},
		{"a UUID and more", successorUID + "0", "not a Kubernetes pod UID"},
		{"long", strings.Repeat("a", 1000), "not a Kubernetes pod UID"},
	}
	h := newHolder(nil)
	path := serve(t, h, 0)
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			conn := dial(t, path)
			if _, err := conn.Write(requestLine(tc.uid)); err != nil {
				t.Fatal(err)
			}
			got := readAnswer(t, conn)
			if got.Released || !strings.Contains(got.Error, tc.want) || tc.uid != "" && !strings.Contains(got.Error, fmt.Sprintf("%q", tc.uid)) {
				t.Errorf("answer %+v; want an error naming %q and saying %q", got, tc.uid, tc.want)
			}
			notAsked(t, h)
			if _, err := handover.Request(t.Context(), path, tc.uid); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Request for %q = %v; want it refused before asking, saying %q", tc.uid, err, tc.want)
			}
		})
	}
	t.Run("then a pod UID", func(t *testing.T) {
		for _, uid := range []string{successorUID, "8d3f0c2b9a7e4d6f1b5c3a2e0f9d8c7b"} {
			if err := handover.ValidatePodUID(uid); err != nil {
				t.Errorf("ValidatePodUID(%q) = %v, want nil", uid, err)
			}
		}
		granted, err := handover.Request(t.Context(), path, successorUID)
		if err != nil {
			t.Fatalf("Request after the refusals: %v; want the node", err)
		}
		defer granted.Close()
		if got := <-h.asked; got != successorUID {
			t.Errorf("the holder was asked for %q, want %s", got, successorUID)
		}
	})
}

// TestStaleRequestNotHonoured: a request that waited while the holder
// weighed another, and whose sender is gone by its turn, is not honoured
// (the holder once handed the node to a successor that had given up and
// exited, leaving no agent to serve it); the holder keeps the node for a
// successor that is there.
func TestStaleRequestNotHonoured(t *testing.T) {
	for _, tc := range []struct {
		name string
		// ask sends a request for otherUID whose sender is gone, and
		// returns the connection to read the answer on.
		ask  func(t *testing.T, path string) net.Conn
		want string
	}{
		{
			name: "sender closed its end",
			ask: func(t *testing.T, path string) net.Conn {
				conn := dial(t, path)
				if _, err := conn.Write(requestLine(otherUID)); err != nil {
					t.Fatal(err)
				}
				// Reading stays open, so the test sees the answer.
				if err := conn.CloseWrite(); err != nil {
					t.Fatal(err)
				}
				return conn
			},
			want: "closed its connection",
		},
		{name: "sender process gone", ask: askAndDie, want: "is gone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHolder(errors.New("still starting"))
			h.gate = make(chan struct{})
			path := serve(t, h, 0)
			// A first request holds the holder until the second's sender
			// is gone.
			first := dial(t, path)
			if _, err := first.Write(requestLine(successorUID)); err != nil {
				t.Fatal(err)
			}
			if got := <-h.asked; got != successorUID {
				t.Fatalf("the holder was asked for %q, want %s", got, successorUID)
			}
			stale := tc.ask(t, path)
			close(h.gate)
			if got := readAnswer(t, first); !strings.Contains(got.Error, "still starting") {
				t.Fatalf("the first request was answered %+v, want the holder's refusal", got)
			}
			got := readAnswer(t, stale)
			if got.Released || !strings.Contains(got.Error, tc.want) {
				t.Errorf("the stale request was answered %+v, want an error saying %q", got, tc.want)
			}
			notAsked(t, h)
		})
	}
}

// askAndDie runs the test binary as a successor that asks for the node
// for otherUID and exits, passing its connection to the test first; it
// returns that connection once the process is gone.
func askAndDie(t *testing.T, path string) net.Conn {
	t.Helper()
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	ours, theirs := os.NewFile(uintptr(pair[0]), "test end"), os.NewFile(uintptr(pair[1]), "sender end")
	defer ours.Close()
	cmd := exec.Command("/proc/self/exe", "-test.run=^$")
	cmd.Env = append(os.Environ(), senderEnv+"="+path)
	cmd.ExtraFiles = []*os.File{theirs}
	output, err := cmd.CombinedOutput()
	theirs.Close()
	if err != nil {
		t.Fatalf("the sender: %v: %s", err, output)
	}
	buf, oob := make([]byte, 1), make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := unix.Recvmsg(int(ours.Fd()), buf, oob, 0)
	if err != nil {
		t.Fatalf("receive the sender's connection: %v", err)
	}
	messages, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(messages) != 1 {
		t.Fatalf("the sender passed no connection: %v", err)
	}
	fds, err := unix.ParseUnixRights(&messages[0])
	if err != nil || len(fds) != 1 {
		t.Fatalf("the sender passed no connection: %v", err)
	}
	file := os.NewFile(uintptr(fds[0]), "sender's connection")
	defer file.Close()
	conn, err := net.FileConn(file)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if err := conn.SetReadDeadline(time.Now().Add(waitTimeout)); err != nil {
		t.Fatal(err)
	}
	return conn
}

// sendAndDie is the test binary as askAndDie's sender: it asks the
// handover socket at path for the node and passes its connection to the
// test over descriptor 3, then returns (and the process exits).
func sendAndDie(path string) error {
	conn, err := net.Dial("unix", path)
	if err != nil {
		return err
	}
	if _, err := conn.Write(requestLine(otherUID)); err != nil {
		return err
	}
	file, err := conn.(*net.UnixConn).File()
	if err != nil {
		return err
	}
	return unix.Sendmsg(3, []byte{0}, unix.UnixRights(int(file.Fd())), nil, 0)
}
