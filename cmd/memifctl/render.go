package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	memifv1 "github.com/contivpp/memif-agent/api/memif/v1"
)

// none stands for an empty cell.
const none = "-"

func newTable(out io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
}

func writeRow(table io.Writer, cells ...string) {
	fmt.Fprintln(table, strings.Join(cells, "\t"))
}

func writeAllocationTable(out io.Writer, allocs []*memifv1.MemifAllocation, showSecrets bool) error {
	if len(allocs) == 0 {
		_, err := fmt.Fprintln(out, "No memif allocations on this node.")
		return err
	}
	table := newTable(out)
	writeRow(table, withSecret(showSecrets, "SECRET", "ALLOCATION", "POD", "CONTAINER", "DEVICES", "NETWORK", "MODE", "ADDRESSES", "REFUSED", "HOST SOCKET", "ALLOCATED")...)
	for _, a := range allocs {
		networks := a.GetNetworks()
		writeRow(table, withSecret(showSecrets, a.GetSecret(),
			a.GetAllocationId(), podName(a), cell(a.GetContainerName()), cell(strings.Join(a.GetDeviceIds(), ",")),
			perMemif(networks, (*memifv1.MemifNetwork).GetNetwork), perMemif(networks, (*memifv1.MemifNetwork).GetMode),
			perMemif(networks, addresses), refusedCell(networks),
			cell(a.GetHostSocket()), timeCell(a.GetAllocatedAt()))...)
	}
	return table.Flush()
}

// writePodMemifTable writes a row per memif of an allocation whose
// networks are known (a row per allocation otherwise), then why each
// refused memif is not wired.
func writePodMemifTable(out io.Writer, memifs []*memifv1.MemifAllocation, showSecrets bool) error {
	table := newTable(out)
	writeRow(table, withSecret(showSecrets, "SECRET", "CONTAINER", "ALLOCATION", "MEMIF", "NETWORK", "MODE", "ADDRESSES", "GATEWAY", "REFUSED", "HOST SOCKET", "CONTAINER SOCKET")...)
	var refusals []string
	for _, m := range memifs {
		row := func(memif string, n *memifv1.MemifNetwork) {
			writeRow(table, withSecret(showSecrets, m.GetSecret(),
				cell(m.GetContainerName()), m.GetAllocationId(), memif, cell(n.GetNetwork()), cell(n.GetMode()),
				cell(addresses(n)), cell(strings.Join(n.GetGateway(), ",")), cell(n.GetRefusedReason()),
				cell(m.GetHostSocket()), cell(m.GetContainerSocket()))...)
		}
		if len(m.GetNetworks()) == 0 {
			row(memifIDs(len(m.GetDeviceIds())), nil)
			continue
		}
		for _, n := range m.GetNetworks() {
			row(strconv.FormatUint(uint64(n.GetMemifId()), 10), n)
			if n.GetRefusedReason() != "" {
				refusals = append(refusals, fmt.Sprintf("memif %d of container %s (%s) is not wired: %s",
					n.GetMemifId(), cell(m.GetContainerName()), m.GetAllocationId(), n.GetRefusedMessage()))
			}
		}
	}
	if err := table.Flush(); err != nil {
		return err
	}
	if len(refusals) == 0 {
		return nil
	}
	_, err := fmt.Fprintf(out, "\n%s\n", strings.Join(refusals, "\n"))
	return err
}

// perMemif is a cell of one value per memif, in the allocation's memif
// order, comma separated, "-" for a memif without one; "-" alone when no
// memif has one.
func perMemif(networks []*memifv1.MemifNetwork, value func(*memifv1.MemifNetwork) string) string {
	values := make([]string, len(networks))
	set := false
	for i, n := range networks {
		values[i] = cell(value(n))
		set = set || values[i] != none
	}
	if !set {
		return none
	}
	return strings.Join(values, ",")
}

// addresses are a memif's pod-side addresses, space separated: the
// cells' commas separate memifs.
func addresses(n *memifv1.MemifNetwork) string { return strings.Join(n.GetIps(), " ") }

// refusedCell names each refused memif and why: "1:unknown-network".
func refusedCell(networks []*memifv1.MemifNetwork) string {
	var refused []string
	for _, n := range networks {
		if n.GetRefusedReason() != "" {
			refused = append(refused, fmt.Sprintf("%d:%s", n.GetMemifId(), n.GetRefusedReason()))
		}
	}
	return cell(strings.Join(refused, ","))
}

func writeEventTable(out io.Writer, events []*memifv1.EventRecord) error {
	if len(events) == 0 {
		_, err := fmt.Fprintln(out, "No events in the history.")
		return err
	}
	table := newTable(out)
	writeRow(table, "SEQ", "STARTED", "DURATION", "METHOD", "EVENT", "RESULT")
	for _, e := range events {
		writeRow(table, strconv.FormatUint(e.GetSeq(), 10), timeCell(e.GetStartedAt()), durationCell(e),
			e.GetMethod(), cell(e.GetDescription()), resultCell(e.GetError()))
	}
	return table.Flush()
}

// Watch rows are written one at a time as changes arrive, so they use
// fixed column widths instead of a tabwriter.
const changeRowFormat = "%-9s  %-36s  %-30s  %-15s  %s\n"

func writeChangeHeader(out io.Writer) error {
	_, err := fmt.Fprintf(out, changeRowFormat, "CHANGE", "ALLOCATION", "POD", "CONTAINER", "HOST SOCKET")
	return err
}

func writeChangeRow(out io.Writer, change *memifv1.AllocationChange) error {
	a := change.GetAllocation()
	_, err := fmt.Fprintf(out, changeRowFormat, changeKind(change.GetKind()), a.GetAllocationId(), podName(a),
		cell(a.GetContainerName()), cell(a.GetHostSocket()))
	return err
}

// writeChangeJSON writes one change per line (JSON Lines).
func writeChangeJSON(out io.Writer, change *memifv1.AllocationChange) error {
	raw, err := protojson.Marshal(change)
	if err != nil {
		return fmt.Errorf("encode change as JSON: %w", err)
	}
	var line bytes.Buffer
	if err := json.Compact(&line, raw); err != nil {
		return fmt.Errorf("encode change as JSON: %w", err)
	}
	line.WriteByte('\n')
	_, err = out.Write(line.Bytes())
	return err
}

// writeJSONList writes messages as one indented JSON array. protojson
// varies its whitespace on purpose; compacting and re-indenting makes the
// output stable for scripts and diffs.
func writeJSONList[M proto.Message](out io.Writer, messages []M) error {
	items := make([]json.RawMessage, 0, len(messages))
	for _, msg := range messages {
		raw, err := protojson.Marshal(msg)
		if err != nil {
			return fmt.Errorf("encode JSON output: %w", err)
		}
		items = append(items, raw)
	}
	raw, err := json.Marshal(items)
	if err != nil {
		return fmt.Errorf("encode JSON output: %w", err)
	}
	var indented bytes.Buffer
	if err := json.Indent(&indented, raw, "", "  "); err != nil {
		return fmt.Errorf("encode JSON output: %w", err)
	}
	indented.WriteByte('\n')
	_, err = out.Write(indented.Bytes())
	return err
}

// withSecret appends the secret cell when secrets are shown.
func withSecret(show bool, secret string, cells ...string) []string {
	if show {
		return append(cells, cell(secret))
	}
	return cells
}

func cell(text string) string {
	if text == "" {
		return none
	}
	return text
}

func podName(a *memifv1.MemifAllocation) string {
	if a.GetPodName() == "" {
		return "(unbound)"
	}
	return a.GetPodNamespace() + "/" + a.GetPodName()
}

// memifIDs names the memif IDs on a socket with n devices: 0..n-1.
func memifIDs(n int) string {
	switch n {
	case 0:
		return none
	case 1:
		return "0"
	}
	return fmt.Sprintf("0-%d", n-1)
}

func timeCell(ts *timestamppb.Timestamp) string {
	if ts == nil {
		return none
	}
	return ts.AsTime().UTC().Format("2006-01-02T15:04:05.000Z")
}

func durationCell(e *memifv1.EventRecord) string {
	if e.GetStartedAt() == nil || e.GetFinishedAt() == nil {
		return none
	}
	return e.GetFinishedAt().AsTime().Sub(e.GetStartedAt().AsTime()).Round(time.Microsecond).String()
}

func resultCell(errText string) string {
	if errText == "" {
		return "ok"
	}
	return "error: " + errText
}

func changeKind(kind memifv1.ChangeKind) string {
	return strings.ToLower(strings.TrimPrefix(kind.String(), "CHANGE_KIND_"))
}
