package procnet

import (
	"net"
	"os"
	"slices"
	"testing"
)

func TestDecodeAddress(t *testing.T) {
	cases := []struct {
		name    string
		hex     string
		want    string
		wantErr bool
	}{
		{name: "ipv4 loopback", hex: "0100007F:1F90", want: "127.0.0.1:8080"},
		{name: "ipv4 any", hex: "00000000:0050", want: "0.0.0.0:80"},
		{name: "ipv6 loopback", hex: "00000000000000000000000001000000:1F90", want: "[::1]:8080"},
		{name: "no port", hex: "0100007F", wantErr: true},
		{name: "short host", hex: "01007F:1F90", wantErr: true},
		{name: "not hex", hex: "0100007G:1F90", wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeAddress(tc.hex)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("DecodeAddress(%q) = %q; want an error", tc.hex, got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("DecodeAddress(%q) = %q, %v; want %q", tc.hex, got, err, tc.want)
			}
		})
	}
}

// TestListeningTCPFindsOwnListener reads this test process: a listener it
// opens is found, and is gone once closed.
func TestListeningTCPFindsOwnListener(t *testing.T) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	address := listener.Addr().String()
	got, err := ListeningTCP(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(got, address) {
		t.Errorf("ListeningTCP = %v; want it to hold %s", got, address)
	}
	listener.Close()
	if got, err = ListeningTCP(os.Getpid()); err != nil || slices.Contains(got, address) {
		t.Errorf("after close ListeningTCP = %v, %v; want no %s", got, err, address)
	}
}

func TestListeningTCPNoProcess(t *testing.T) {
	// Pids are at most 2^22 on Linux: this one cannot exist.
	if got, err := ListeningTCP(1 << 23); err == nil {
		t.Fatalf("ListeningTCP(no such process) = %v; want an error", got)
	}
}
