package cnfsetup

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/contivpp/memif-agent/plugins/networks/memifjson"
)

const (
	// StartupConfName and SetupCLIName are the files' names in the
	// runtime directory.
	StartupConfName = "startup.conf"
	SetupCLIName    = "setup.cli"
	// CLISocketName is vppctl's socket in the runtime directory.
	CLISocketName = "cli.sock"
	// maxSecret is memif's limit: 24 bytes with the terminating NUL.
	maxSecret = 23
	// maxSocketPath is what a Unix socket address holds.
	maxSocketPath = 107
)

// Startup says where VPP is and where it keeps its files.
type Startup struct {
	// Prefix holds bin/vpp and lib/vpp_plugins (/vpp in the image).
	Prefix string
	// RuntimeDir holds startup.conf, setup.cli and VPP's sockets; it must
	// be the pod's own (/tmp/vpp in the image), short enough for a socket
	// path.
	RuntimeDir string
	// APIPrefix names VPP's shared-memory API segment: unique among the
	// VPPs sharing /dev/shm (a pod has its own).
	APIPrefix string
}

// StartupConf returns VPP's startup.conf.
func StartupConf(s Startup) string {
	return fmt.Sprintf(`unix { nodaemon cli-listen %[1]s/%[4]s runtime-dir %[1]s exec %[1]s/%[5]s poll-sleep-usec 100 }
api-segment { prefix %[2]s }
socksvr { socket-name %[1]s/api.sock }
plugins { path %[3]s/lib/vpp_plugins plugin default { disable } plugin memif_plugin.so { enable } plugin ping_plugin.so { enable } }
memory { main-heap-size 256M main-heap-page-size 4k }
buffers { buffers-per-numa 16384 page-size 4k }
statseg { socket-name %[1]s/stats.sock size 32M page-size 4k }
`, s.RuntimeDir, s.APIPrefix, s.Prefix, CLISocketName, SetupCLIName)
}

// InterfaceName is VPP's name of the memif with memifID on the socket with
// socketID.
func InterfaceName(socketID int, memifID uint32) string {
	return fmt.Sprintf("memif%d/%d", socketID, memifID)
}

// SetupCLI returns setup.cli for the interfaces of f, each the memif slave
// with secret.
func SetupCLI(f memifjson.File, secret string) (string, error) {
	if len(f.Interfaces) == 0 {
		return "", fmt.Errorf("%s lists no interfaces", memifjson.FileName)
	}
	if err := checkSecret(secret); err != nil {
		return "", err
	}
	var script strings.Builder
	socketIDs := map[string]int{}
	names := map[string]bool{}
	routed := map[bool]bool{}
	var routes []string
	for i, iface := range f.Interfaces {
		socketID, ok := socketIDs[iface.Socket]
		if !ok {
			if err := checkSocket(iface.Socket); err != nil {
				return "", fmt.Errorf("%s, interface %d: %w", memifjson.FileName, i, err)
			}
			socketID = len(socketIDs) + 1
			socketIDs[iface.Socket] = socketID
			fmt.Fprintf(&script, "create memif socket id %d filename %s\n", socketID, iface.Socket)
		}
		name := InterfaceName(socketID, iface.MemifID)
		if names[name] {
			return "", fmt.Errorf("%s, interface %d: memif ID %d on %s is listed twice", memifjson.FileName, i, iface.MemifID, iface.Socket)
		}
		names[name] = true
		lines, err := interfaceLines(iface, socketID, name, secret)
		if err != nil {
			return "", fmt.Errorf("%s, interface %d (%s): %w", memifjson.FileName, i, name, err)
		}
		script.WriteString(lines)
		for _, gateway := range iface.Gateway {
			if routed[gateway.Is4()] {
				continue
			}
			routed[gateway.Is4()] = true
			prefix := "::/0"
			if gateway.Is4() {
				prefix = "0.0.0.0/0"
			}
			routes = append(routes, fmt.Sprintf("ip route add %s via %s %s\n", prefix, gateway, name))
		}
	}
	script.WriteString(strings.Join(routes, ""))
	return script.String(), nil
}

// interfaceLines creates one memif, sets it up and gives it its addresses.
func interfaceLines(iface memifjson.Interface, socketID int, name, secret string) (string, error) {
	create := fmt.Sprintf("create interface memif id %d socket-id %d slave secret %s", iface.MemifID, socketID, secret)
	switch iface.Mode {
	case "ip":
		create += " mode ip"
	case "ethernet":
		if iface.MAC != "" {
			mac, err := net.ParseMAC(iface.MAC)
			if err != nil || len(mac) != 6 {
				return "", fmt.Errorf("MAC %q is not a 6-byte MAC address", iface.MAC)
			}
			create += " hw-addr " + mac.String()
		}
	default:
		return "", fmt.Errorf("mode %q, want ip or ethernet", iface.Mode)
	}
	if iface.Queues > 0 {
		create += fmt.Sprintf(" rx-queues %d tx-queues %d", iface.Queues, iface.Queues)
	}
	if iface.RingSize > 0 {
		create += fmt.Sprintf(" ring-size %d", iface.RingSize)
	}
	if iface.BufferSize > 0 {
		create += fmt.Sprintf(" buffer-size %d", iface.BufferSize)
	}
	lines := []string{create}
	if iface.MTU > 0 {
		// memif's hardware MTU is fixed ("not supported"); the packet MTU
		// is what VPP fragments and drops by.
		lines = append(lines, fmt.Sprintf("set interface mtu packet %d %s", iface.MTU, name))
	}
	lines = append(lines, "set interface state "+name+" up")
	for _, ip := range iface.IPs {
		if !ip.IsValid() {
			return "", errors.New("an address in ips is not valid")
		}
		lines = append(lines, fmt.Sprintf("set interface ip address %s %s", name, ip))
	}
	for _, gateway := range iface.Gateway {
		if !gateway.IsValid() {
			return "", errors.New("an address in gateway is not valid")
		}
	}
	return strings.Join(lines, "\n") + "\n", nil
}

func checkSecret(secret string) error {
	switch {
	case secret == "":
		return errors.New("MEMIF_SECRET is empty: the agent puts the memif's secret in the container's environment")
	case len(secret) > maxSecret:
		return fmt.Errorf("MEMIF_SECRET is %d bytes, memif takes at most %d", len(secret), maxSecret)
	case !oneToken(secret):
		return errors.New("MEMIF_SECRET holds a space or a control character")
	}
	return nil
}

func checkSocket(socket string) error {
	switch {
	case !filepath.IsAbs(socket):
		return fmt.Errorf("socket %q is not an absolute path", socket)
	case len(socket) > maxSocketPath:
		return fmt.Errorf("socket %q is %d bytes, a Unix socket's path at most %d", socket, len(socket), maxSocketPath)
	case !oneToken(socket):
		return fmt.Errorf("socket %q holds a space or a control character", socket)
	}
	return nil
}

// oneToken says s is one word of VPP's CLI.
func oneToken(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) || r == '#' })
}
