package procnet

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// tcpListen is the state column's value for a listening socket in
// /proc/net/tcp (TCP_LISTEN).
const tcpListen = "0A"

// ListeningTCP returns the local addresses ("host:port") of the TCP
// sockets pid listens on: the sockets among its open file descriptors that
// the kernel's tcp and tcp6 tables show in the listen state.
func ListeningTCP(pid int) ([]string, error) {
	inodes, err := socketInodes(pid)
	if err != nil {
		return nil, err
	}
	var addresses []string
	for _, table := range []string{"tcp", "tcp6"} {
		found, err := listeningIn(fmt.Sprintf("/proc/%d/net/%s", pid, table), inodes)
		if err != nil {
			return nil, err
		}
		addresses = append(addresses, found...)
	}
	return addresses, nil
}

// socketInodes returns the inodes of the sockets among pid's open file
// descriptors, as the tables' inode column spells them.
func socketInodes(pid int) (map[string]bool, error) {
	fdDir := fmt.Sprintf("/proc/%d/fd", pid)
	entries, err := os.ReadDir(fdDir)
	if err != nil {
		return nil, fmt.Errorf("list the file descriptors of process %d: %w", pid, err)
	}
	inodes := map[string]bool{}
	for _, entry := range entries {
		// A descriptor closed since ReadDir has no link any more: skip it.
		target, err := os.Readlink(filepath.Join(fdDir, entry.Name()))
		if inode, ok := strings.CutPrefix(target, "socket:["); err == nil && ok {
			inodes[strings.TrimSuffix(inode, "]")] = true
		}
	}
	return inodes, nil
}

// listeningIn returns the local addresses of the listening sockets of
// table (a /proc/PID/net/tcp or tcp6 file) whose inode is in inodes.
func listeningIn(table string, inodes map[string]bool) ([]string, error) {
	file, err := os.Open(table)
	if err != nil {
		return nil, fmt.Errorf("open the socket table: %w", err)
	}
	defer file.Close()
	var addresses []string
	scanner := bufio.NewScanner(file)
	scanner.Scan() // the header line
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) <= 9 || fields[3] != tcpListen || !inodes[fields[9]] {
			continue
		}
		address, err := DecodeAddress(fields[1])
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", table, err)
		}
		addresses = append(addresses, address)
	}
	if err := scanner.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", table, err)
	}
	return addresses, nil
}

// DecodeAddress turns an address of /proc/net/tcp or tcp6, such as
// "0100007F:1F90", into "host:port" ("127.0.0.1:8080").
func DecodeAddress(hexAddress string) (string, error) {
	hostHex, portHex, found := strings.Cut(hexAddress, ":")
	if !found || (len(hostHex) != 2*net.IPv4len && len(hostHex) != 2*net.IPv6len) {
		return "", fmt.Errorf("decode socket address %q: want 8 or 32 hex digits, a colon and the port", hexAddress)
	}
	port, err := strconv.ParseUint(portHex, 16, 16)
	if err != nil {
		return "", fmt.Errorf("decode the port of socket address %q: %w", hexAddress, err)
	}
	raw := make(net.IP, len(hostHex)/2)
	for i := range raw {
		b, err := strconv.ParseUint(hostHex[2*i:2*i+2], 16, 8)
		if err != nil {
			return "", fmt.Errorf("decode the host of socket address %q: %w", hexAddress, err)
		}
		raw[i] = byte(b)
	}
	// The kernel prints each 32-bit word in host (little-endian) order.
	for word := 0; word+4 <= len(raw); word += 4 {
		raw[word], raw[word+1], raw[word+2], raw[word+3] = raw[word+3], raw[word+2], raw[word+1], raw[word]
	}
	return net.JoinHostPort(raw.String(), strconv.Itoa(int(port))), nil
}
