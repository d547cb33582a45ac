package testpmd

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"time"
)

// telemetryReplyLimit is DPDK's max_output_len: no reply is longer.
const telemetryReplyLimit = 16384

// queryTelemetry sends one command to DPDK's telemetry socket (v2, a
// SOCK_SEQPACKET socket) and decodes the value of its reply, which DPDK
// wraps in an object keyed by the command's path.
func queryTelemetry(ctx context.Context, socket, command string, value any) error {
	var dialer net.Dialer
	conn, err := dialer.DialContext(ctx, "unixpacket", socket)
	if err != nil {
		return fmt.Errorf("connect to DPDK telemetry %s: %w", socket, err)
	}
	defer conn.Close()
	deadline := time.Now().Add(5 * time.Second)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := conn.SetDeadline(deadline); err != nil {
		return fmt.Errorf("set deadline on DPDK telemetry %s: %w", socket, err)
	}
	buf := make([]byte, telemetryReplyLimit)
	// DPDK greets every connection with its version before any command.
	if _, err := conn.Read(buf); err != nil {
		return fmt.Errorf("read DPDK telemetry greeting from %s: %w", socket, err)
	}
	if _, err := conn.Write([]byte(command)); err != nil {
		return fmt.Errorf("send %q to DPDK telemetry %s: %w", command, socket, err)
	}
	n, err := conn.Read(buf)
	if err != nil {
		return fmt.Errorf("read reply to %q from DPDK telemetry %s: %w", command, socket, err)
	}
	var reply map[string]json.RawMessage
	if err := json.Unmarshal(buf[:n], &reply); err != nil {
		return fmt.Errorf("decode reply to %q from DPDK telemetry: %w (reply %q)", command, err, buf[:n])
	}
	path, _, _ := strings.Cut(command, ",")
	raw, found := reply[path]
	if !found || string(raw) == "null" {
		return fmt.Errorf("DPDK telemetry has no answer to %q (reply %q): is the port probed?", command, buf[:n])
	}
	if err := json.Unmarshal(raw, value); err != nil {
		return fmt.Errorf("decode %q from DPDK telemetry: %w", command, err)
	}
	return nil
}
