// Package connflood is a hostile local client for tests of a TCP
// listener: the test binary, run again as the unprivileged user nobody,
// holds many connections to an address, sends nothing on them, and
// reopens each one the server closes (issue 36: "a slow or hostile client
// delays only itself").
//
// A test package using it calls RunIfAsked first thing in its TestMain.
package connflood

import (
	"bufio"
	"context"
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
	// specEnv, set, makes the test binary the flood: "ADDR COUNT SOURCE".
	specEnv = "MEMIF_AGENT_TEST_CONNFLOOD"
	// limit ends a flood its test forgot.
	limit = 3 * time.Minute
	// nobody is the unprivileged user the flood runs as.
	nobody = 65534
)

// Flood is a running flood.
type Flood struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
}

// Start runs the flood as the user nobody: count connections to addr
// from the local address source ("" lets the kernel choose), and returns
// once each has been opened. tb's end stops it.
func Start(tb testing.TB, addr string, count int, source string) *Flood {
	tb.Helper()
	needs.Root(tb, "running the flood as the unprivileged user nobody")
	f := &Flood{cmd: exec.Command(otheruser.TestBinary(tb, "connflood"))}
	f.cmd.Env = []string{specEnv + "=" + strings.Join([]string{addr, strconv.Itoa(count), source}, " ")}
	f.cmd.Stderr = os.Stderr
	f.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	var err error
	if f.stdin, err = f.cmd.StdinPipe(); err != nil {
		tb.Fatal(err)
	}
	stdout, err := f.cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	f.stdout = bufio.NewReader(stdout)
	if err := f.cmd.Start(); err != nil {
		tb.Fatalf("start the flood as nobody: %v", err)
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
	spec := os.Getenv(specEnv)
	if spec == "" {
		return
	}
	fields := strings.Split(spec, " ")
	count, err := strconv.Atoi(fields[1])
	if err != nil || len(fields) != 3 {
		fmt.Fprintf(os.Stderr, "connflood: bad %s=%q\n", specEnv, spec)
		os.Exit(2)
	}
	os.Exit(run(fields[0], count, fields[2]))
}

// run holds count connections to addr until stdin closes (or limit
// passes), printing once each has been opened, and at the end how many it
// opened in all.
func run(addr string, count int, source string) int {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	dialer := net.Dialer{Timeout: time.Second}
	if source != "" {
		dialer.LocalAddr = &net.TCPAddr{IP: net.ParseIP(source)}
	}
	var opened atomic.Int64
	var filled, holders sync.WaitGroup
	filled.Add(count)
	for range count {
		holders.Go(func() { holdReopening(ctx, &dialer, addr, &opened, &filled) })
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
func holdReopening(ctx context.Context, dialer *net.Dialer, addr string, opened *atomic.Int64, filled *sync.WaitGroup) {
	first := true
	for ctx.Err() == nil {
		conn, err := dialer.DialContext(ctx, "tcp", addr)
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
