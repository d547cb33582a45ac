package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// netNamespace is an added node's network namespace, held open by a
// sleeping process. The node's containerd, kubelet, its host-network pods
// (the agent) and its pods' bridge live in it; the node's address is on
// eth0, the inside end of a veth pair whose host end (link) routes that
// address, so the API server reaches kubelet at the node's address as on
// any node. Its loopback is its own: two nodes' agents on the same port
// do not meet, and apiProxy forwards the API server's loopback port in.
type netNamespace struct {
	holder *process
	// link is the veth's end on the host.
	link string
}

// newNetNamespace makes the namespace, the veth pair with ip inside, the
// host route to ip, and brings up the namespace's loopback.
func newNetNamespace(logDir, link string, ip net.IP) (*netNamespace, error) {
	holder, err := startProcess(logDir, "net-namespace", nil, "unshare", "--net", "sleep", "infinity")
	if err != nil {
		return nil, err
	}
	ns := &netNamespace{holder: holder, link: link}
	if err := ns.waitUnshared(); err != nil {
		ns.close()
		return nil, err
	}
	pid := strconv.Itoa(holder.Pid())
	host := [][]string{
		{"link", "add", link, "type", "veth", "peer", "name", "eth0", "netns", pid},
		{"link", "set", link, "up"},
		{"route", "add", ip.String() + "/32", "dev", link},
	}
	inside := [][]string{
		{"link", "set", "lo", "up"},
		{"addr", "add", ip.String() + "/32", "dev", "eth0"},
		{"link", "set", "eth0", "up"},
		{"route", "add", "default", "dev", "eth0"},
	}
	for _, args := range host {
		if err := runIP(nil, args); err != nil {
			ns.close()
			return nil, err
		}
	}
	for _, args := range inside {
		if err := runIP(ns.argv(), args); err != nil {
			ns.close()
			return nil, err
		}
	}
	return ns, nil
}

func runIP(prefix, args []string) error {
	argv := append(append(prefix, "ip"), args...)
	if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, out)
	}
	return nil
}

func (ns *netNamespace) waitUnshared() error {
	self, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		return fmt.Errorf("read this process's network namespace: %w", err)
	}
	for {
		if err := ns.holder.Running(); err != nil {
			return fmt.Errorf("create the node's network namespace (needs root and util-linux's unshare): %w", err)
		}
		theirs, err := os.Readlink(ns.path())
		if err == nil && theirs != self {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (ns *netNamespace) path() string { return "/proc/" + strconv.Itoa(ns.holder.Pid()) + "/ns/net" }

// argv is the command line prefix that runs a program in the namespace
// (nsenter execs it: the pid is the program's).
func (ns *netNamespace) argv(argv ...string) []string {
	return append([]string{"nsenter", "--net=" + ns.path(), "--"}, argv...)
}

// do runs f on an OS thread moved into the namespace: a socket f makes is
// the namespace's for its life. The thread moves back before the Go
// runtime may use it again; were it to end instead, the peers forked from
// it would get their Pdeathsig.
func (ns *netNamespace) do(f func() error) error {
	runtime.LockOSThread()
	own, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("open this thread's network namespace: %w", err)
	}
	defer unix.Close(own)
	node, err := unix.Open(ns.path(), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("open %s: %w", ns.path(), err)
	}
	defer unix.Close(node)
	if err := unix.Setns(node, unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("enter %s: %w", ns.path(), err)
	}
	result := f()
	if err := unix.Setns(own, unix.CLONE_NEWNET); err != nil {
		// The thread stays locked, in the node's namespace, and ends
		// with this goroutine's caller.
		return errors.Join(result, fmt.Errorf("leave %s: %w", ns.path(), err))
	}
	runtime.UnlockOSThread()
	return result
}

// DialContext connects to address from inside the namespace.
func (ns *netNamespace) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	var conn net.Conn
	err := ns.do(func() error {
		var err error
		conn, err = (&net.Dialer{}).DialContext(ctx, network, address)
		return err
	})
	return conn, err
}

func (ns *netNamespace) close() {
	_ = ns.holder.stop()
	// The veth goes with the namespace once its last process is gone;
	// deleting it here does not wait for that.
	if out, err := exec.Command("ip", "link", "delete", ns.link).CombinedOutput(); err != nil && !strings.Contains(string(out), "Cannot find device") {
		fmt.Fprintf(os.Stderr, "cluster: delete link %s: %v: %s\n", ns.link, err, out)
	}
}

// apiProxy listens on a loopback address inside a node's network namespace
// and forwards each connection to the same address on the host: kubelet's
// kubeconfig and the agent's in-cluster client name the API server at
// 127.0.0.1:<port> on every node, and the API server listens on the host's
// loopback only.
type apiProxy struct {
	listener net.Listener
	target   string
	conns    sync.WaitGroup
	mu       sync.Mutex
	open     map[net.Conn]struct{}
	closed   bool
	served   chan struct{}
}

func newAPIProxy(ns *netNamespace, address string) (*apiProxy, error) {
	p := &apiProxy{target: address, open: map[net.Conn]struct{}{}, served: make(chan struct{})}
	err := ns.do(func() error {
		var err error
		p.listener, err = net.Listen("tcp", address)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("listen on %s in the node's network namespace: %w", address, err)
	}
	go p.serve()
	return p, nil
}

// serve accepts until the listener is closed; each connection's copies
// are counted in conns.
func (p *apiProxy) serve() {
	defer close(p.served)
	for {
		conn, err := p.listener.Accept()
		if err != nil {
			return
		}
		if !p.track(conn) {
			conn.Close()
			return
		}
		p.conns.Add(1)
		go p.forward(conn)
	}
}

func (p *apiProxy) forward(in net.Conn) {
	defer p.conns.Done()
	defer p.untrack(in)
	out, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	if !p.track(out) {
		out.Close()
		return
	}
	defer p.untrack(out)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(out, in)
		closeWrite(out)
	}()
	_, _ = io.Copy(in, out)
	closeWrite(in)
	<-copied
}

func closeWrite(conn net.Conn) {
	if tcp, ok := conn.(*net.TCPConn); ok {
		_ = tcp.CloseWrite()
	}
}

func (p *apiProxy) track(conn net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.open[conn] = struct{}{}
	return true
}

func (p *apiProxy) untrack(conn net.Conn) {
	p.mu.Lock()
	delete(p.open, conn)
	p.mu.Unlock()
	conn.Close()
}

// close stops accepting, closes every open connection and waits for the
// goroutines.
func (p *apiProxy) close() error {
	if p == nil {
		return nil
	}
	err := p.listener.Close()
	p.mu.Lock()
	p.closed = true
	for conn := range p.open {
		conn.Close()
	}
	p.mu.Unlock()
	<-p.served
	p.conns.Wait()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
