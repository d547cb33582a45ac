package cnfsetup_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/contivpp/memif-agent/plugins/networks/memifjson"
	"github.com/contivpp/memif-agent/test/kit/vppcnf/cnfsetup"
)

const secret = "0123456789abcdef012345"

func prefixes(s ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, p := range s {
		out = append(out, netip.MustParsePrefix(p))
	}
	return out
}

func addrs(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, a := range s {
		out = append(out, netip.MustParseAddr(a))
	}
	return out
}

func TestSetupCLIFollowsMemifJSON(t *testing.T) {
	tests := []struct {
		name       string
		interfaces []memifjson.Interface
		want       string
	}{
		{
			name: "ip mode in an l3 network, every field",
			interfaces: []memifjson.Interface{{MemifID: 0, Socket: "/run/vpp/memif.sock", Network: "red", Mode: "ip",
				IPs: prefixes("10.70.0.2/24"), Gateway: addrs("10.70.0.1"), MAC: "02:fe:00:00:00:01",
				Queues: 2, RingSize: 1024, BufferSize: 2048, MTU: 9000}},
			want: `create memif socket id 1 filename /run/vpp/memif.sock
create interface memif id 0 socket-id 1 slave secret ` + secret + ` mode ip rx-queues 2 tx-queues 2 ring-size 1024 buffer-size 2048
set interface mtu packet 9000 memif1/0
set interface state memif1/0 up
set interface ip address memif1/0 10.70.0.2/24
ip route add 0.0.0.0/0 via 10.70.0.1 memif1/0
`,
		},
		{
			name: "ethernet mode in an l2 network: the address and MAC, no route",
			interfaces: []memifjson.Interface{{MemifID: 3, Socket: "/run/vpp/memif.sock", Network: "lab", Mode: "ethernet",
				IPs: prefixes("192.168.9.5/24"), MAC: "02:FE:00:00:00:01"}},
			want: `create memif socket id 1 filename /run/vpp/memif.sock
create interface memif id 3 socket-id 1 slave secret ` + secret + ` hw-addr 02:fe:00:00:00:01
set interface state memif1/3 up
set interface ip address memif1/3 192.168.9.5/24
`,
		},
		{
			name: "dual stack: a default route per family",
			interfaces: []memifjson.Interface{{Socket: "/run/vpp/memif.sock", Mode: "ip",
				IPs: prefixes("10.70.0.2/24", "fd00:70::2/64"), Gateway: addrs("10.70.0.1", "fd00:70::1")}},
			want: `create memif socket id 1 filename /run/vpp/memif.sock
create interface memif id 0 socket-id 1 slave secret ` + secret + ` mode ip
set interface state memif1/0 up
set interface ip address memif1/0 10.70.0.2/24
set interface ip address memif1/0 fd00:70::2/64
ip route add 0.0.0.0/0 via 10.70.0.1 memif1/0
ip route add ::/0 via fd00:70::1 memif1/0
`,
		},
		{
			name: "two networks: one socket, two memif IDs, the default route via the first",
			interfaces: []memifjson.Interface{
				{MemifID: 0, Socket: "/run/vpp/memif.sock", Mode: "ip", IPs: prefixes("10.70.0.2/24"), Gateway: addrs("10.70.0.1")},
				{MemifID: 1, Socket: "/run/vpp/memif.sock", Mode: "ip", IPs: prefixes("10.71.0.2/24"), Gateway: addrs("10.71.0.1")},
			},
			want: `create memif socket id 1 filename /run/vpp/memif.sock
create interface memif id 0 socket-id 1 slave secret ` + secret + ` mode ip
set interface state memif1/0 up
set interface ip address memif1/0 10.70.0.2/24
create interface memif id 1 socket-id 1 slave secret ` + secret + ` mode ip
set interface state memif1/1 up
set interface ip address memif1/1 10.71.0.2/24
ip route add 0.0.0.0/0 via 10.70.0.1 memif1/0
`,
		},
		{
			name: "two sockets: socket IDs in the order of the file",
			interfaces: []memifjson.Interface{
				{Socket: "/run/a/memif.sock", Mode: "ethernet"},
				{Socket: "/run/b/memif.sock", Mode: "ethernet"},
			},
			want: `create memif socket id 1 filename /run/a/memif.sock
create interface memif id 0 socket-id 1 slave secret ` + secret + `
set interface state memif1/0 up
create memif socket id 2 filename /run/b/memif.sock
create interface memif id 0 socket-id 2 slave secret ` + secret + `
set interface state memif2/0 up
`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := cnfsetup.SetupCLI(memifjson.File{Interfaces: tt.interfaces}, secret)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("setup.cli:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestSetupCLIRefusesWhatIsNotOneCLIToken(t *testing.T) {
	good := memifjson.Interface{Socket: "/run/vpp/memif.sock", Mode: "ip"}
	tests := []struct {
		name       string
		interfaces []memifjson.Interface
		secret     string
		wantError  string
	}{
		{name: "no interfaces", secret: secret, wantError: "lists no interfaces"},
		{name: "no secret", interfaces: []memifjson.Interface{good}, wantError: "MEMIF_SECRET is empty"},
		{name: "secret too long", interfaces: []memifjson.Interface{good}, secret: strings.Repeat("s", 24), wantError: "at most 23"},
		{name: "a command in the secret", interfaces: []memifjson.Interface{good}, secret: "s\nset int state", wantError: "control character"},
		{name: "relative socket", interfaces: []memifjson.Interface{{Socket: "memif.sock", Mode: "ip"}}, secret: secret, wantError: "not an absolute path"},
		{name: "a command in the socket", interfaces: []memifjson.Interface{{Socket: "/run/vpp/memif.sock\ncreate loopback interface", Mode: "ip"}}, secret: secret, wantError: "control character"},
		{name: "a space in the socket", interfaces: []memifjson.Interface{{Socket: "/run/vpp/a b.sock", Mode: "ip"}}, secret: secret, wantError: "a space"},
		{name: "socket too long", interfaces: []memifjson.Interface{{Socket: "/" + strings.Repeat("d", 107), Mode: "ip"}}, secret: secret, wantError: "at most 107"},
		{name: "unknown mode", interfaces: []memifjson.Interface{{Socket: "/run/vpp/memif.sock", Mode: "punt"}}, secret: secret, wantError: `mode "punt"`},
		{name: "bad MAC", interfaces: []memifjson.Interface{{Socket: "/run/vpp/memif.sock", Mode: "ethernet", MAC: "02:fe up"}}, secret: secret, wantError: "not a 6-byte MAC"},
		{name: "a memif ID twice", interfaces: []memifjson.Interface{good, good}, secret: secret, wantError: "listed twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := cnfsetup.SetupCLI(memifjson.File{Interfaces: tt.interfaces}, tt.secret)
			if err == nil || !strings.Contains(err.Error(), tt.wantError) {
				t.Fatalf("error %v, want one saying %q; script:\n%s", err, tt.wantError, got)
			}
		})
	}
}

func TestStartupConfKeepsVPPsFilesInItsRuntimeDir(t *testing.T) {
	conf := cnfsetup.StartupConf(cnfsetup.Startup{Prefix: "/vpp", RuntimeDir: "/tmp/vpp", APIPrefix: "cnf"})
	for _, want := range []string{
		"cli-listen /tmp/vpp/cli.sock", "runtime-dir /tmp/vpp", "exec /tmp/vpp/setup.cli",
		"api-segment { prefix cnf }", "socket-name /tmp/vpp/api.sock", "socket-name /tmp/vpp/stats.sock",
		"path /vpp/lib/vpp_plugins plugin default { disable } plugin memif_plugin.so { enable } plugin ping_plugin.so { enable }",
		"main-heap-page-size 4k", "buffers-per-numa 16384 page-size 4k", "size 32M page-size 4k",
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("startup.conf lacks %q:\n%s", want, conf)
		}
	}
	if strings.Contains(conf, "/run/vpp") {
		t.Errorf("startup.conf names /run/vpp, the allocation's directory the pod shares with the agent:\n%s", conf)
	}
}
