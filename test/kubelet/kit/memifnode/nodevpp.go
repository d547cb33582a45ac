package memifnode

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/contivpp/memif-agent/test/kit/vpp"
	"github.com/contivpp/memif-agent/test/kit/vppcnf"
	"github.com/contivpp/memif-agent/test/kit/vppstate"
	"github.com/contivpp/memif-agent/test/kubelet/kit/cluster"
)

// VPPRunDir is the node's VPP run directory, with the API socket the
// chart's vpp values give the agent (vpp.apiSocket).
const VPPRunDir = "/run/vpp"

// NodeVPP is the node's vswitch: scripts/vpp.sh's VPP started in the
// node's mount namespace, where the memif sockets the agent names are,
// with its sockets in the node's VPPRunDir.
type NodeVPP struct {
	VPP *vpp.VPP
	// State reads VPP over a binary API connection of its own.
	State   *vppstate.State
	Version string
}

// StartNodeVPP starts the node's VPP with the memif plugin and plugins
// (ping: VPP answers the echo requests sent to a gateway it holds). Stop
// it before the cluster.
func StartNodeVPP(ctx context.Context, c *cluster.Cluster, plugins ...string) (*NodeVPP, error) {
	return StartNodeVPPOn(ctx, c.FirstNode(), plugins...)
}

// StartNodeVPPOn is StartNodeVPP on one node of a cluster of several
// (cluster.AllNodes): in the node's namespaces, with its VPPRunDir.
func StartNodeVPPOn(ctx context.Context, node cluster.NodeHost, plugins ...string) (*NodeVPP, error) {
	prefix, err := vpp.Prefix()
	if err != nil {
		return nil, err
	}
	v, err := vpp.Launch(prefix, node.HostPath(VPPRunDir), vpp.InNamespace(node.NodeArgv), vpp.Plugins(plugins...))
	if err != nil {
		if v != nil {
			err = errors.Join(err, v.Stop())
		}
		return nil, fmt.Errorf("start VPP on node %s: %w", node.Name(), err)
	}
	n := &NodeVPP{VPP: v}
	if n.State, err = vppstate.Dial(ctx, v.APISocket, "memifnode"); err != nil {
		return nil, errors.Join(err, v.Stop())
	}
	if n.Version, err = n.State.Version(ctx); err != nil {
		return nil, errors.Join(err, n.Stop())
	}
	return n, nil
}

// Stop closes the API connection and stops VPP.
func (n *NodeVPP) Stop() error {
	return errors.Join(n.State.Close(), n.VPP.Stop())
}

// Kill kills the node's VPP (SIGKILL), as a crash would, after closing
// the API connection of State; its sockets are gone until StartAgain.
func (n *NodeVPP) Kill(t testing.TB) {
	t.Helper()
	if err := n.State.Close(); err != nil {
		t.Errorf("close the API connection to the node's VPP: %v", err)
	}
	n.VPP.Kill(t)
}

// StartAgain starts the killed VPP again with the same configuration, run
// directory and sockets (a fresh VPP with no interfaces), and connects
// State to it.
func (n *NodeVPP) StartAgain(ctx context.Context, t testing.TB) {
	t.Helper()
	n.VPP.Restart(t)
	state, err := vppstate.Dial(ctx, n.VPP.APISocket, "memifnode")
	if err != nil {
		t.Fatalf("connect to the node's VPP started again: %v", err)
	}
	n.State = state
}

// CLI is vppctl on the node's VPP's CLI socket.
func (n *NodeVPP) CLI() vppcnf.CLI { return vppcnf.HostCLI(n.VPP.Prefix, n.VPP.CLISocket) }

// ShowMemif returns the memif VPP holds as master on socket (the
// allocation's host socket) as `show memif` prints it.
func (n *NodeVPP) ShowMemif(ctx context.Context, socket string) (vppcnf.Memif, error) {
	held, err := n.State.FindMemif(ctx, socket)
	if err != nil {
		return vppcnf.Memif{}, err
	}
	if held == nil {
		return vppcnf.Memif{}, fmt.Errorf("the node's VPP holds no memif on %s", socket)
	}
	memifs, err := n.CLI().ShowMemif(ctx)
	if err != nil {
		return vppcnf.Memif{}, err
	}
	for _, m := range memifs {
		if m.Name == held.Name {
			return m, nil
		}
	}
	return vppcnf.Memif{}, fmt.Errorf("the node's VPP lists %s on %s in its API but not in show memif", held.Name, socket)
}

// RxMode returns the rx mode (polling, interrupt, adaptive) of every queue
// of the interface name, from `show interface rx-placement`.
func (n *NodeVPP) RxMode(ctx context.Context, name string) ([]string, error) {
	out, err := n.CLI().Run(ctx, "show interface rx-placement")
	if err != nil {
		return nil, err
	}
	return parseRxPlacement(out, name), nil
}

var rxQueueLine = regexp.MustCompile(`^\s*(\S+) queue (\d+) \((\w+)\)`)

// parseRxPlacement reads the modes of name's queues from lines such as
// "  memif1/0 queue 0 (interrupt)".
func parseRxPlacement(out, name string) []string {
	var modes []string
	for _, line := range strings.Split(out, "\n") {
		if m := rxQueueLine.FindStringSubmatch(line); m != nil && m[1] == name {
			modes = append(modes, m[3])
		}
	}
	return modes
}

// TraceAPI starts (again, from empty) the trace of the binary API
// messages VPP receives; APIChanges reads it.
func (n *NodeVPP) TraceAPI(ctx context.Context) error {
	for _, command := range []string{"api trace off", "api trace free", "api trace on"} {
		if _, err := n.CLI().Run(ctx, command); err != nil {
			return err
		}
	}
	return nil
}

// APIChanges returns the messages received since TraceAPI that are not
// reads: anything an agent sends to change VPP (creating, deleting or
// setting anything), whatever its effect. Dumps, gets, pings and the
// client's own session and event subscriptions are reads.
func (n *NodeVPP) APIChanges(ctx context.Context) (changes []string, received int, err error) {
	out, err := n.CLI().Run(ctx, "api trace dump")
	if err != nil {
		return nil, 0, err
	}
	names := tracedMessages(out)
	for _, name := range names {
		if !isRead(name) {
			changes = append(changes, name)
		}
	}
	return changes, len(names), nil
}

var (
	tracedMessage = regexp.MustCompile(`(?m)^vl_api_(\w+)_t:`)
	tracedCommand = regexp.MustCompile(`(?m)^\s*cmd: (.*)$`)
)

// tracedMessages returns the names of the messages in `api trace dump`
// output, in order. A CLI command sent over the binary API (cli_inband)
// is named with its command, as in cli_inband "show interface memif1/0".
func tracedMessages(dump string) []string {
	var names []string
	headers := tracedMessage.FindAllStringSubmatchIndex(dump, -1)
	for i, h := range headers {
		name := dump[h[2]:h[3]]
		if name == "cli_inband" {
			end := len(dump)
			if i+1 < len(headers) {
				end = headers[i+1][0]
			}
			if cmd := tracedCommand.FindStringSubmatch(dump[h[1]:end]); cmd != nil {
				name += fmt.Sprintf(" %q", cmd[1])
			}
		}
		names = append(names, name)
	}
	return names
}

// readMessage matches the names of the messages that read VPP: dumps and
// gets (sw_interface_get_table, get_first_msg_id), pings, versions, a
// client's own session and event subscriptions, and CLI show commands
// (the agent reads interface counters with show interface).
var readMessage = regexp.MustCompile(`(_dump|_get)$|(^|_)get_|^(control_ping|show_version|show_threads|want_\w+|memclnt_\w+|sockclnt_\w+|api_versions)$|^cli_inband "show `)

func isRead(name string) bool { return readMessage.MatchString(name) }
