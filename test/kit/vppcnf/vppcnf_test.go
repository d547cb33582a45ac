package vppcnf_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contivpp/memif-agent/plugins/networks/memifjson"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/program"
	"github.com/contivpp/memif-agent/test/kit/syncbuffer"
	"github.com/contivpp/memif-agent/test/kit/vpp"
	"github.com/contivpp/memif-agent/test/kit/vppcnf"
)

// entrypoint builds cmd/vppcnf into a short temp directory of t's.
func entrypoint(t *testing.T) (binary, dir string) {
	t.Helper()
	content, err := vppcnf.Entrypoint()
	if err != nil {
		t.Fatal(err)
	}
	// VPP's sockets go under dir: a short path, not t.TempDir().
	dir, err = os.MkdirTemp("", "cnf-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	binary = filepath.Join(dir, "vppcnf")
	if err := os.WriteFile(binary, content, 0o700); err != nil {
		t.Fatal(err)
	}
	return binary, dir
}

func randomHex(t *testing.T, bytes int) string {
	t.Helper()
	b := make([]byte, bytes)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// podSide is the entrypoint running as a process, then VPP in its place.
type podSide struct {
	cmd    *exec.Cmd
	output *syncbuffer.Buffer
	exited chan struct{}
}

// startPodSide runs the entrypoint with the pod's paths moved under dir
// and its own API segment prefix, and stops it when t ends.
func startPodSide(t *testing.T, binary, dir, prefix, memifJSON, secret string) *podSide {
	t.Helper()
	cmd := exec.Command(binary, "-memif-json", memifJSON, "-vpp", prefix,
		"-runtime-dir", filepath.Join(dir, "vpp"), "-api-prefix", "cnf-"+randomHex(t, 6))
	cmd.Env = append(os.Environ(), "MEMIF_SECRET="+secret)
	p := &podSide{cmd: cmd, output: &syncbuffer.Buffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.output, p.output
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := program.StartAndWait(cmd, func(error) { close(p.exited) }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

// running fails t when the pod side has exited.
func (p *podSide) running(t *testing.T) {
	t.Helper()
	select {
	case <-p.exited:
		t.Fatalf("the pod side exited (%v); its output:\n%s", p.cmd.ProcessState, p.output)
	default:
	}
}

// TestPodSideVPPPingsTheNodeOverAMemifWithTwoQueues runs the node's VPP
// (test/kit/vpp) programmed as the agent programs an l3 network (a
// loopback in the VRF holding the gateway, the memif in ip mode with two
// queue pairs unnumbered to it, a /32 route to the pod's address) and the
// pod image's entrypoint as a process, from a memif.json the agent would
// write; the entrypoint starts before memif.json and the socket exist.
func TestPodSideVPPPingsTheNodeOverAMemifWithTwoQueues(t *testing.T) {
	node := vpp.Start(t, vpp.Plugins("ping"))
	binary, dir := entrypoint(t)
	ctx := t.Context()
	secret := randomHex(t, 8)
	socket := filepath.Join(node.Dir, "memif.sock")
	memifJSON := filepath.Join(dir, memifjson.FileName)

	pod := startPodSide(t, binary, dir, node.Prefix, memifJSON, secret)
	content, err := memifjson.Render([]memifjson.Interface{{
		MemifID: 0, Socket: socket, Network: "red", Mode: "ip",
		IPs: []netip.Prefix{netip.MustParsePrefix("10.70.0.2/24")}, Gateway: []netip.Addr{netip.MustParseAddr("10.70.0.1")},
		Queues: 2, RingSize: 1024, BufferSize: 2048, MTU: 9000,
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(memifJSON, content, memifjson.FileMode); err != nil {
		t.Fatal(err)
	}
	for _, command := range []string{
		"ip table add 7",
		"create loopback interface",
		"set interface ip table loop0 7",
		"set interface state loop0 up",
		"set interface ip address loop0 10.70.0.1/24",
		"create memif socket id 1 filename " + socket,
		"create interface memif id 0 socket-id 1 master secret " + secret + " mode ip rx-queues 2 tx-queues 2 ring-size 1024 buffer-size 2048",
		"set interface ip table memif1/0 7",
		"set interface mtu packet 9000 memif1/0",
		"set interface state memif1/0 up",
		"set interface unnumbered memif1/0 use loop0",
		"ip route add 10.70.0.2/32 table 7 via memif1/0",
		// Beyond the gateway: reached through the pod's default route.
		"create loopback interface",
		"set interface ip table loop1 7",
		"set interface state loop1 up",
		"set interface ip address loop1 10.99.0.1/32",
	} {
		if out := node.CLI(t, command); strings.TrimSpace(out) != "" && !strings.HasPrefix(out, "loop") {
			t.Fatalf("node's VPP refused %q: %s", command, out)
		}
	}

	podCLI := vppcnf.HostCLI(node.Prefix, filepath.Join(dir, "vpp", "cli.sock"))
	nodeCLI := vppcnf.HostCLI(node.Prefix, node.CLISocket)
	poll.Every(t, time.Minute, 200*time.Millisecond, "the pod side's memif connected", func() error {
		pod.running(t)
		return podCLI.Connected(ctx)
	})

	pings := []struct {
		name   string
		from   vppcnf.CLI
		target string
	}{
		{name: "pod to its gateway", from: podCLI, target: "10.70.0.1"},
		{name: "pod beyond its gateway, by its default route", from: podCLI, target: "10.99.0.1"},
		// The node's ping leaves from the VRF's table.
		{name: "node to the pod", from: nodeCLI, target: "10.70.0.2 table-id 7"},
	}
	for _, ping := range pings {
		t.Run(ping.name, func(t *testing.T) {
			poll.Every(t, 30*time.Second, 200*time.Millisecond, "ping "+ping.target, func() error {
				sent, received, err := ping.from.Ping(ctx, ping.target)
				if err == nil && (sent != vppcnf.PingCount || received != sent) {
					err = fmt.Errorf("%d sent, %d received", sent, received)
				}
				return err
			})
		})
	}

	sides := []struct {
		name      string
		cli       vppcnf.CLI
		wantSlave bool
	}{{"pod", podCLI, true}, {"node", nodeCLI, false}}
	for _, side := range sides {
		t.Run("show memif on the "+side.name+" side", func(t *testing.T) {
			memifs, err := side.cli.ShowMemif(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(memifs) != 1 {
				t.Fatalf("%d memifs, want 1: %+v", len(memifs), memifs)
			}
			m := memifs[0]
			if m.Name != "memif1/0" || m.Mode != "ip" || !m.Connected || m.Slave != side.wantSlave || m.QueuePairs() != 2 || m.RingSize != 1024 {
				t.Errorf("memif %+v, want memif1/0 in ip mode, connected, slave %v, 2 queue pairs of 1024 slots", m, side.wantSlave)
			}
		})
	}
	if out := pod.output.String(); strings.Contains(out, secret) {
		t.Errorf("the pod side printed the secret:\n%s", out)
	}
}

// TestEntrypointRefusesBadInputWithAMessage runs the entrypoint where no
// VPP is needed: it stops before starting one.
func TestEntrypointRefusesBadInputWithAMessage(t *testing.T) {
	binary, dir := entrypoint(t)
	tests := []struct {
		name      string
		memifJSON string
		secret    string
		wantError string
	}{
		{name: "no secret", memifJSON: `{"interfaces":[{"memif-id":0,"socket":"/run/vpp/memif.sock","mode":"ip"}]}`, wantError: "MEMIF_SECRET is empty"},
		{name: "not JSON", memifJSON: `{"interfaces":`, secret: "s", wantError: "decode"},
		{name: "no interfaces", memifJSON: `{"interfaces":[]}`, secret: "s", wantError: "lists no interfaces"},
		{name: "a command in the socket", memifJSON: `{"interfaces":[{"socket":"/run/vpp/memif.sock\ncreate loopback interface","mode":"ip"}]}`, secret: "s", wantError: "control character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			memifJSON := filepath.Join(dir, memifjson.FileName)
			if err := os.WriteFile(memifJSON, []byte(tt.memifJSON), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, binary, "-memif-json", memifJSON, "-vpp", "/nonexistent", "-runtime-dir", filepath.Join(dir, "vpp"))
			cmd.Env = []string{"MEMIF_SECRET=" + tt.secret}
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), tt.wantError) {
				t.Fatalf("exit %v, output %q; want exit status 1 saying %q", err, out, tt.wantError)
			}
		})
	}
}
