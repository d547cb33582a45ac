package vppcnf_test

import (
	"strings"
	"testing"

	"github.com/contivpp/memif-agent/test/kit/vppcnf"
)

// showMemifSlave and showMemifMaster are VPP 26.10's output for the two
// sides of one memif in ip mode with two queue pairs.
const showMemifSlave = `sockets
  id  listener    filename
  0   no          /tmp/vpp/memif.sock
  1   no          /run/vpp/memif.sock

interface memif1/0
  remote-name "VPP 26.10-rc0~374-gb575ec2c56d"
  remote-interface "memif1/0"
  socket-id 1 id 0 mode ip
  flags admin-up slave connected zero-copy
  listener-fd 0 conn-fd 12
  num-s2m-rings 2 num-m2s-rings 2 buffer-size 2048 num-regions 2
  region 0 size 66048 fd 13
  region 1 size 67108864 fd 5
    slave-to-master ring 0:
      region 0 offset 0 ring-size 1024 int-fd 14
      head 0 tail 0 flags 0x0001 interrupts 0
    slave-to-master ring 1:
      region 0 offset 16512 ring-size 1024 int-fd 15
      head 0 tail 0 flags 0x0001 interrupts 0
    master-to-slave ring 0:
      region 0 offset 33024 ring-size 1024 int-fd 16
      head 1024 tail 0 flags 0x0001 interrupts 0
    master-to-slave ring 1:
      region 0 offset 49536 ring-size 1024 int-fd 17
      head 1024 tail 0 flags 0x0001 interrupts 0
`

const showMemifMasterTwo = `sockets
  id  listener    filename
  0   no          /run/vpp/memif.sock
  1   yes (2)     /var/lib/memif-agent/sockets/a/memif.sock

interface memif1/0
  remote-name "VPP 26.10-rc0~374-gb575ec2c56d"
  remote-interface "memif1/0"
  socket-id 1 id 0 mode ip
  flags admin-up connected
  listener-fd 13 conn-fd 12
  num-s2m-rings 2 num-m2s-rings 2 buffer-size 0 num-regions 2
  region 0 size 66048 fd 14
  region 1 size 67108864 fd 15
    master-to-slave ring 0:
      region 0 offset 33024 ring-size 1024 int-fd 18
      head 1024 tail 6 flags 0x0001 interrupts 0
    master-to-slave ring 1:
      region 0 offset 49536 ring-size 1024 int-fd 19
      head 1024 tail 0 flags 0x0001 interrupts 0
    slave-to-master ring 0:
      region 0 offset 0 ring-size 1024 int-fd 16
      head 6 tail 6 flags 0x0001 interrupts 0
    slave-to-master ring 1:
      region 0 offset 16512 ring-size 1024 int-fd 17
      head 0 tail 0 flags 0x0001 interrupts 0
interface memif1/1
  socket-id 1 id 1 mode ethernet
  flags admin-up
  listener-fd 13 conn-fd 0
  num-s2m-rings 0 num-m2s-rings 0 buffer-size 0 num-regions 0
`

func TestParseShowMemif(t *testing.T) {
	tests := []struct {
		name   string
		output string
		want   []vppcnf.Memif
	}{
		{name: "slave, two queue pairs", output: showMemifSlave, want: []vppcnf.Memif{
			{Name: "memif1/0", SocketID: 1, ID: 0, Mode: "ip", Slave: true, Connected: true, S2MRings: 2, M2SRings: 2, RingSize: 1024, BufferSize: 2048},
		}},
		{name: "master, one connected and one waiting", output: showMemifMasterTwo, want: []vppcnf.Memif{
			{Name: "memif1/0", SocketID: 1, ID: 0, Mode: "ip", Connected: true, S2MRings: 2, M2SRings: 2, RingSize: 1024},
			{Name: "memif1/1", SocketID: 1, ID: 1, Mode: "ethernet"},
		}},
		{name: "no memif", output: "sockets\n  id  listener    filename\n  0   no          /run/vpp/memif.sock\n", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := vppcnf.ParseShowMemif(tt.output)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("%d memifs %+v, want %d", len(got), got, len(tt.want))
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("memif %d:\n got %+v\nwant %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestParseShowMemifRefusesWhatItCannotRead(t *testing.T) {
	_, err := vppcnf.ParseShowMemif("interface memif1/0\n  flags admin-up\n")
	if err == nil || !strings.Contains(err.Error(), "memif1/0") {
		t.Fatalf("error %v, want one naming memif1/0", err)
	}
}

func TestQueuePairsIsTheSmallerRingCount(t *testing.T) {
	if got := (vppcnf.Memif{S2MRings: 2, M2SRings: 1}).QueuePairs(); got != 1 {
		t.Fatalf("QueuePairs %d, want 1", got)
	}
}

func TestParsePing(t *testing.T) {
	tests := []struct {
		name                   string
		output                 string
		wantSent, wantReceived int
		wantError              string
	}{
		{name: "answered", output: "116 bytes from 10.70.0.1: icmp_seq=1 ttl=64 time=1.9723 ms\n116 bytes from 10.70.0.1: icmp_seq=2 ttl=64 time=9.9782 ms\n116 bytes from 10.70.0.1: icmp_seq=3 ttl=64 time=5.8265 ms\n\nStatistics: 3 sent, 3 received, 0% packet loss\n", wantSent: 3, wantReceived: 3},
		{name: "unanswered", output: "\nStatistics: 3 sent, 0 received, 100% packet loss\n", wantSent: 3},
		{name: "no route: none sent", output: "Failed: no egress interface\nFailed: no egress interface\nFailed: no egress interface\n\nStatistics: 0 sent, 0 received, 0% packet loss\n"},
		{name: "no ping plugin", output: "unknown input `ping 10.70.0.1 repeat 3 interval 0.1'\n", wantError: "no statistics"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sent, received, err := vppcnf.ParsePing(tt.output)
			if tt.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantError) {
					t.Fatalf("error %v, want one saying %q", err, tt.wantError)
				}
				return
			}
			if err != nil || sent != tt.wantSent || received != tt.wantReceived {
				t.Fatalf("%d sent, %d received, %v; want %d sent, %d received", sent, received, err, tt.wantSent, tt.wantReceived)
			}
		})
	}
}
