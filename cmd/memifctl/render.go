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
	writeRow(table, withSecret(showSecrets, "SECRET", "ALLOCATION", "POD", "CONTAINER", "DEVICES", "HOST SOCKET", "ALLOCATED")...)
	for _, a := range allocs {
		writeRow(table, withSecret(showSecrets, a.GetSecret(),
			a.GetAllocationId(), podName(a), cell(a.GetContainerName()), cell(strings.Join(a.GetDeviceIds(), ",")),
			cell(a.GetHostSocket()), timeCell(a.GetAllocatedAt()))...)
	}
	return table.Flush()
}

func writePodMemifTable(out io.Writer, memifs []*memifv1.MemifAllocation, showSecrets bool) error {
	table := newTable(out)
	writeRow(table, withSecret(showSecrets, "SECRET", "CONTAINER", "ALLOCATION", "MEMIF IDS", "HOST SOCKET", "CONTAINER SOCKET")...)
	for _, m := range memifs {
		writeRow(table, withSecret(showSecrets, m.GetSecret(),
			cell(m.GetContainerName()), m.GetAllocationId(), memifIDs(len(m.GetDeviceIds())),
			cell(m.GetHostSocket()), cell(m.GetContainerSocket()))...)
	}
	return table.Flush()
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
