package vppcnf

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// PingCount is how many echo requests Ping sends, 0.1 s apart.
const PingCount = 3

// Exec runs argv where a VPP runs (in a pod's container, on this host) and
// returns what it printed.
type Exec func(ctx context.Context, argv ...string) (string, error)

// CLI runs vppctl commands against one VPP.
type CLI struct {
	// Exec runs vppctl.
	Exec Exec
	// Vppctl is vppctl's path where Exec runs it.
	Vppctl string
	// Socket is the VPP's CLI socket, as Exec's side sees it.
	Socket string
}

// PodCLI is the CLI of the VPP in a pod running Image, through exec (for
// example kubectl exec into its container).
func PodCLI(exec Exec) CLI {
	return CLI{Exec: exec, Vppctl: Vppctl, Socket: CLISocket}
}

// HostCLI is the CLI of a VPP on this host: vppctl from VPP's prefix on
// its CLI socket.
func HostCLI(prefix, socket string) CLI {
	return CLI{Exec: runHere, Vppctl: filepath.Join(prefix, "bin", "vppctl"), Socket: socket}
}

func runHere(ctx context.Context, argv ...string) (string, error) {
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, out)
	}
	return string(out), nil
}

// Run runs one CLI command (its words split on spaces) and returns VPP's
// answer. vppctl exits 0 when VPP refuses a command: the answer says so.
func (c CLI) Run(ctx context.Context, command string) (string, error) {
	argv := append([]string{c.Vppctl, "-s", c.Socket}, strings.Fields(command)...)
	out, err := c.Exec(ctx, argv...)
	if err != nil {
		return out, fmt.Errorf("vppctl %s: %w", command, err)
	}
	return out, nil
}

// Ping sends PingCount echo requests to target (an IPv4 or IPv6 address)
// and returns how many were sent and answered. A VPP with no route to
// target sends none ("Failed: no egress interface"): a test of isolation
// asserts received == 0, whatever was sent.
func (c CLI) Ping(ctx context.Context, target string) (sent, received int, err error) {
	out, err := c.Run(ctx, fmt.Sprintf("ping %s repeat %d interval 0.1", target, PingCount))
	if err != nil {
		return 0, 0, err
	}
	return ParsePing(out)
}

var pingStatistics = regexp.MustCompile(`Statistics: (\d+) sent, (\d+) received`)

// ParsePing reads the counts of VPP's ping output ("Statistics: 3 sent, 3
// received, 0% packet loss").
func ParsePing(output string) (sent, received int, err error) {
	m := pingStatistics.FindStringSubmatch(output)
	if m == nil {
		return 0, 0, fmt.Errorf("VPP's ping printed no statistics: %q", strings.TrimSpace(output))
	}
	sent, _ = strconv.Atoi(m[1])
	received, _ = strconv.Atoi(m[2])
	return sent, received, nil
}

// Memif is one memif interface in `show memif`.
type Memif struct {
	// Name is VPP's, memif<socket ID>/<memif ID>.
	Name     string
	SocketID uint32
	ID       uint32
	// Mode is "ethernet" or "ip".
	Mode string
	// Slave says this VPP is the memif slave (client).
	Slave     bool
	Connected bool
	// S2MRings and M2SRings count the slave-to-master and
	// master-to-slave rings the two sides agreed on, 0 until connected.
	S2MRings, M2SRings int
	// RingSize is the slots of each ring; BufferSize is the bytes of each
	// buffer (0 on the master side, which uses the slave's).
	RingSize, BufferSize int
}

// QueuePairs is how many rx/tx queue pairs the memif runs.
func (m Memif) QueuePairs() int { return min(m.S2MRings, m.M2SRings) }

// ShowMemif returns the memif interfaces VPP has.
func (c CLI) ShowMemif(ctx context.Context) ([]Memif, error) {
	out, err := c.Run(ctx, "show memif")
	if err != nil {
		return nil, err
	}
	return ParseShowMemif(out)
}

// Connected returns nil once VPP has a memif and every memif it has is
// connected (poll it: the slave connects within a few seconds).
func (c CLI) Connected(ctx context.Context) error {
	memifs, err := c.ShowMemif(ctx)
	if err != nil {
		return err
	}
	if len(memifs) == 0 {
		return fmt.Errorf("VPP at %s has no memif yet", c.Socket)
	}
	var down []string
	for _, m := range memifs {
		if !m.Connected {
			down = append(down, m.Name)
		}
	}
	if len(down) > 0 {
		return fmt.Errorf("VPP at %s: memif %s not connected", c.Socket, strings.Join(down, ", "))
	}
	return nil
}

var (
	memifHeader   = regexp.MustCompile(`^interface (memif\d+/\d+)$`)
	memifIDs      = regexp.MustCompile(`^socket-id (\d+) id (\d+) mode (\S+)`)
	memifRings    = regexp.MustCompile(`^num-s2m-rings (\d+) num-m2s-rings (\d+) buffer-size (\d+)`)
	memifRingSize = regexp.MustCompile(`ring-size (\d+)`)
)

// ParseShowMemif reads the interfaces of VPP's `show memif` output.
func ParseShowMemif(output string) ([]Memif, error) {
	var memifs []Memif
	var current *Memif
	for _, line := range strings.Split(output, "\n") {
		line = strings.TrimSpace(line)
		if m := memifHeader.FindStringSubmatch(line); m != nil {
			memifs = append(memifs, Memif{Name: m[1]})
			current = &memifs[len(memifs)-1]
			continue
		}
		if current == nil {
			continue
		}
		if m := memifIDs.FindStringSubmatch(line); m != nil {
			current.SocketID, current.ID, current.Mode = atou(m[1]), atou(m[2]), m[3]
		} else if flags, ok := strings.CutPrefix(line, "flags "); ok {
			words := strings.Fields(flags)
			for _, word := range words {
				current.Slave = current.Slave || word == "slave"
				current.Connected = current.Connected || word == "connected"
			}
		} else if m := memifRings.FindStringSubmatch(line); m != nil {
			current.S2MRings, current.M2SRings, current.BufferSize = atoi(m[1]), atoi(m[2]), atoi(m[3])
		} else if m := memifRingSize.FindStringSubmatch(line); m != nil && current.RingSize == 0 {
			current.RingSize = atoi(m[1])
		}
	}
	for _, m := range memifs {
		if m.Mode == "" {
			return nil, fmt.Errorf("show memif: interface %s has no socket-id line: %q", m.Name, output)
		}
	}
	return memifs, nil
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

func atou(s string) uint32 {
	n, _ := strconv.ParseUint(s, 10, 32)
	return uint32(n)
}
