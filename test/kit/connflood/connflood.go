// Package connflood is a hostile local client for tests of a listener:
// the test binary, run again as the unprivileged user nobody (or as root,
// for a socket only root may connect to), holds many connections to a TCP
// address or a Unix socket, sends nothing on them, and reopens each one
// the server closes (issue 36: "a slow or hostile client delays only
// itself").
//
// A test package using it calls RunIfAsked first thing in its TestMain.
package connflood

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/contivpp/memif-agent/test/kit/needs"
	"github.com/contivpp/memif-agent/test/kit/otheruser"
)

const (
	// specEnv, set, makes the test binary the flood: a Spec in JSON.
	specEnv = "MEMIF_AGENT_TEST_CONNFLOOD"
	// limit ends a flood its test forgot.
	limit = 3 * time.Minute
)

// Spec is what a flood holds.
type Spec struct {
	// Network is "tcp" or "unix".
	Network string
	// Address is the host:port or the socket's path.
	Address string
	// Connections is how many connections the flood holds.
	Connections int
	// Source is the local address of TCP connections; "" lets the
	// kernel choose.
	Source string
	// AsRoot runs the flood as root rather than nobody: the stray
	// clients of a socket that lets only root connect.
	AsRoot bool
}

// Flood is a running flood.
type Flood struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
}

// Start runs the flood spec asks for, as the user nobody unless
// spec.AsRoot, and returns once each of its connections has been opened.
// tb's end stops it.
func Start(tb testing.TB, spec Spec) *Flood {
	tb.Helper()
	needs.Root(tb, "running the flood as the unprivileged user nobody, or as root")
	encoded, err := json.Marshal(spec)
	if err != nil {
		tb.Fatal(err)
	}
	f := &Flood{cmd: exec.Command(otheruser.TestBinary(tb, "connflood"))}
	f.cmd.Env = []string{specEnv + "=" + string(encoded)}
	f.cmd.Stderr = os.Stderr
	if !spec.AsRoot {
		f.cmd.SysProcAttr = otheruser.AsNobody()
	}
	if f.stdin, err = f.cmd.StdinPipe(); err != nil {
		tb.Fatal(err)
	}
	stdout, err := f.cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	f.stdout = bufio.NewReader(stdout)
	if err := f.cmd.Start(); err != nil {
		tb.Fatalf("start the flood: %v", err)
	}
	tb.Cleanup(func() {
		f.stdin.Close()
		f.cmd.Process.Kill()
		f.cmd.Wait()
	})
	f.line(tb)
	return f
}

// Stop ends the flood and returns how many connections it opened in all.
func (f *Flood) Stop(tb testing.TB) int {
	tb.Helper()
	f.stdin.Close()
	opened, err := strconv.Atoi(f.line(tb))
	if err != nil {
		tb.Fatalf("the flood's count: %v", err)
	}
	return opened
}

func (f *Flood) line(tb testing.TB) string {
	tb.Helper()
	text, err := f.stdout.ReadString('\n')
	if err != nil {
		tb.Fatalf("the flood printed %q: %v", text, err)
	}
	return strings.TrimSpace(text)
}

// RunIfAsked makes the test binary the flood when Start runs it: it never
// returns then. Otherwise it does nothing.
func RunIfAsked() {
	encoded := os.Getenv(specEnv)
	if encoded == "" {
		return
	}
	var spec Spec
	if err := json.Unmarshal([]byte(encoded), &spec); err != nil {
		fmt.Fprintf(os.Stderr, "connflood: bad %s=%q: %v\n", specEnv, encoded, err)
		os.Exit(2)
	}
	os.Exit(run(spec))
}

// run holds spec's connections until stdin closes (or limit passes),
// printing once each has been opened, and at the end how many it opened
// in all.
func run(spec Spec) int {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	dialer := net.Dialer{Timeout: time.Second}
	if spec.Source != "" {
		dialer.LocalAddr = &net.TCPAddr{IP: net.ParseIP(spec.Source)}
	}
	var opened atomic.Int64
	var filled, holders sync.WaitGroup
	filled.Add(spec.Connections)
	for range spec.Connections {
		holders.Go(func() { holdReopening(ctx, &dialer, spec.Network, spec.Address, &opened, &filled) })
	}
	filled.Wait()
	fmt.Println(opened.Load())
	go func() {
		io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	holders.Wait()
	fmt.Println(opened.Load())
	return 0
}

// holdReopening keeps one connection to addr open until ctx ends, and
// reopens it whenever the server closes it. filled is marked done once the
// first is open.
func holdReopening(ctx context.Context, dialer *net.Dialer, network, addr string, opened *atomic.Int64, filled *sync.WaitGroup) {
	first := true
	for ctx.Err() == nil {
		conn, err := dialer.DialContext(ctx, network, addr)
		if err != nil {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		opened.Add(1)
		if first {
			filled.Done()
			first = false
		}
		stop := context.AfterFunc(ctx, func() { conn.Close() })
		_, err = conn.Read(make([]byte, 1))
		stop()
		conn.Close()
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !errors.Is(err, syscall.ECONNRESET) {
			fmt.Fprintln(os.Stderr, "connflood:", err)
		}
	}
	if first {
		filled.Done()
	}
}
