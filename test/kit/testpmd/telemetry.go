package testpmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"
)

// telemetryReplyLimit is DPDK's max_output_len: no reply is longer.
const telemetryReplyLimit = 16384

// telemetryTimeout bounds a telemetry read whose context has no deadline.
// On a loaded machine DPDK's telemetry threads (control threads, which run
// beside the main lcore) can wait seconds for a CPU: a read waits for its
// answer up to its deadline instead of giving up after a fixed window.
const telemetryTimeout = 2 * time.Minute

// query asks testpmd's telemetry, connecting again while it refuses, until
// it answers, testpmd exits or ctx ends (telemetryTimeout without a
// deadline).
func (v *Vswitch) query(ctx context.Context, command string, value any) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, telemetryTimeout)
		defer cancel()
	}
	for {
		err := queryTelemetry(ctx, v.telemetrySocket(), command, value)
		if err == nil {
			return nil
		}
		if !errors.Is(err, errTelemetryRefused) {
			return v.explain(err)
		}
		select {
		case <-v.exited:
			return v.explain(err)
		case <-ctx.Done():
			return v.explain(fmt.Errorf("%w (last: %w)", ctx.Err(), err))
		case <-time.After(pollInterval):
		}
	}
}

// errTelemetryRefused marks a connection DPDK's telemetry refused or closed
// before greeting it: its listener is not there yet at start, it accepts
// with a backlog of one (connect fails with EAGAIN while another waits to
// be accepted), and it serves at most 10 clients at a time, closing the
// others at once. A new connection a moment later is answered.
var errTelemetryRefused = errors.New("DPDK telemetry refused the connection")

// queryTelemetry sends one command to DPDK's telemetry socket (v2, a
// SOCK_SEQPACKET socket) and decodes the value of its reply, which DPDK
// wraps in an object keyed by the command's path. It waits for the reply
// until ctx's deadline.
func queryTelemetry(ctx context.Context, socket, command string, value any) error {
	var dialer net.Dialer
	conn, err := dialer.DialContext(ctx, "unixpacket", socket)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.EAGAIN) {
			err = errors.Join(errTelemetryRefused, err)
		}
		return fmt.Errorf("connect to DPDK telemetry %s: %w", socket, err)
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	if err := conn.SetDeadline(deadline); err != nil {
		return fmt.Errorf("set deadline on DPDK telemetry %s: %w", socket, err)
	}
	buf := make([]byte, telemetryReplyLimit)
	// DPDK greets every connection it serves with its version before any
	// command, and closes at once one it will not serve.
	if n, err := conn.Read(buf); err != nil || n == 0 {
		if err == nil || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
			err = errors.Join(errTelemetryRefused, io.EOF)
		}
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
