package descriptor

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/contivpp/memif-agent/internal/vppapi"
	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
)

// Counters are VPP's interface counters of one interface, since VPP made
// it (or since clear interfaces).
type Counters struct {
	RxPackets, RxBytes uint64
	TxPackets, TxBytes uint64
	// Drops are the packets VPP dropped that arrived on the interface
	// (VPP's drops counter: no route, no bridge domain, errors...).
	Drops uint64
}

// ReadCounters returns the counters of the interfaces VPP names vppNames,
// by VPP name, read with show interface through the binary API
// (cli_inband): VPP's binary API has no message carrying interface
// counters, they are in its stats segment, a shared-memory layout of its
// own, and in show interface. An interface VPP does not know is absent.
func ReadCounters(ctx context.Context, conn *vppapi.Conn, vppNames []string) (map[string]Counters, error) {
	if len(vppNames) == 0 {
		return map[string]Counters{}, nil
	}
	var reply vppmsg.CliInbandReply
	if err := conn.Request(ctx, &vppmsg.CliInband{Cmd: "show interface " + strings.Join(vppNames, " ")}, &reply); err != nil {
		return nil, fmt.Errorf("read interface counters: %w", err)
	}
	return parseCounters(reply.Reply), nil
}

// parseCounters reads show interface's table: an interface's line starts
// with its name, index, state and MTUs, then its first counter; each
// further counter is on a line of its own, indented. Only counters VPP
// has counted (non-zero) are shown. Lines that are neither (a header, an
// error such as unknown input) are skipped.
func parseCounters(show string) map[string]Counters {
	counters := map[string]Counters{}
	var current string
	for line := range strings.Lines(show) {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if line[0] != ' ' && line[0] != '\t' {
			if len(fields) < 4 || !isIndex(fields[1]) {
				current = ""
				continue
			}
			current = fields[0]
			counters[current] = Counters{}
			fields = fields[4:]
		}
		if current == "" || len(fields) < 2 {
			continue
		}
		value, err := strconv.ParseUint(fields[len(fields)-1], 10, 64)
		if err != nil {
			continue
		}
		c := counters[current]
		switch strings.Join(fields[:len(fields)-1], " ") {
		case "rx packets":
			c.RxPackets = value
		case "rx bytes":
			c.RxBytes = value
		case "tx packets":
			c.TxPackets = value
		case "tx bytes":
			c.TxBytes = value
		case "drops":
			c.Drops = value
		}
		counters[current] = c
	}
	return counters
}

func isIndex(field string) bool {
	_, err := strconv.ParseUint(field, 10, 32)
	return err == nil
}
