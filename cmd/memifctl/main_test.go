package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	"github.com/contivpp/memif-agent/plugins/controller/eventloop"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/devicemanager/config"
	"github.com/contivpp/memif-agent/plugins/devicemanager/manager"
	"github.com/contivpp/memif-agent/plugins/memifwiring/wiring"
	"github.com/contivpp/memif-agent/plugins/networks/netconf"
	"github.com/contivpp/memif-agent/plugins/nodeapi/server"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/test/kit/devicemanagertest"
	"github.com/contivpp/memif-agent/test/kit/fakevswitch"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden with the current output")

// testStart is the device manager's clock: every allocation is made then.
var testStart = time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)

func fixedClock() time.Time { return testStart }

var web = podapi.Pod{ID: podapi.PodID{Namespace: "default", Name: "web"}, UID: "uid-web"}

// agent is the real device manager on the real controller event loop,
// served by the real node API, and how to make its output stable.
type agent struct {
	devices *watchedDevices
	loop    *eventloop.Loop
	socket  string
	// runValues are the run-dependent values of the output (allocation IDs,
	// secrets, the temporary socket root) and their placeholders.
	runValues []string
}

// startAgent runs the agent's device manager, event loop and node API;
// with history, the API serves the loop's event history.
func startAgent(t *testing.T, history bool) *agent {
	t.Helper()
	return startAgentWith(t, history, "")
}

// startAgentWith runs the agent of startAgent, with the memif wiring after
// the device manager when networksConf (networks.conf) is set.
func startAgentWith(t *testing.T, history bool, networksConf string) *agent {
	t.Helper()
	devices := devicemanagertest.New(t, fixedClock)
	handlers := []controllerapi.EventHandler{devices}
	if networksConf != "" {
		handlers = append(handlers, newWiring(t, devices, networksConf))
	}
	loop := devicemanagertest.StartLoop(t, fakevswitch.Committer{}, handlers...)
	a := &agent{devices: &watchedDevices{Manager: devices, registered: make(chan struct{}, 1)}, loop: loop}
	var source controllerapi.EventHistory
	if history {
		source = loop
	}
	a.socket = startAgentAPI(t, a.devices, source)
	return a
}

// allocate allocates deviceIDs as kubelet's Allocate would, and records
// the placeholders of the allocation's ID, secret and socket root.
func (a *agent) allocate(t *testing.T, deviceIDs ...string) *dmapi.AllocateDevice {
	t.Helper()
	allocation := devicemanagertest.Allocate(t, a.loop, deviceIDs...)
	n := len(a.runValues)/6 + 1
	socketRoot := filepath.Dir(filepath.Dir(allocation.Annotations[dmapi.AnnotationSocketHost]))
	a.runValues = append(a.runValues,
		allocation.AllocationID, idPlaceholder(allocation.AllocationID, n),
		allocation.Envs[dmapi.EnvMemifSecret], fmt.Sprintf("(secret %d)", n),
		socketRoot, config.DefaultSocketRoot)
	return allocation
}

// idPlaceholder keeps an allocation ID's device prefix and length (the
// watch table has fixed column widths) and replaces its random suffix.
func idPlaceholder(id string, n int) string {
	prefix, random := id[:strings.LastIndex(id, "-")+1], id[strings.LastIndex(id, "-")+1:]
	return prefix + fmt.Sprintf("rand%0*d", len(random)-len("rand"), n)
}

// normalize replaces the run-dependent values of output by their
// placeholders.
func (a *agent) normalize(output string) string {
	return strings.NewReplacer(a.runValues...).Replace(output)
}

// watchedDevices is the real device manager, telling when a watch has
// been registered, so that the test changes nothing before.
type watchedDevices struct {
	*manager.Manager
	registered chan struct{}
}

func (d *watchedDevices) WatchAllocations(ctx context.Context, changes chan<- dmapi.AllocationChange) {
	d.Manager.WatchAllocations(ctx, changes)
	d.registered <- struct{}{}
}

// populatedNetworks are the networks of the populated agent; pod web's
// annotation puts app's memif in red, sidecar's memif 1 in blue, which
// the node does not have, and leaves sidecar's memif 0 to the default.
const (
	populatedNetworks = "networks:\n  - {name: red, type: l3, subnet: 10.70.0.0/24}\n  - {name: lab, type: l2}\ndefault-network: lab\n"
	webNetworks       = `[{"network": "red", "container": "app"}, {"network": "blue", "container": "sidecar", "memif-id": 1}]`
)

// fakeNetworksPlugin hands out a fixed networks.conf, as the networks
// plugin hands out the file it read.
type fakeNetworksPlugin struct{ config netconf.Config }

func (f fakeNetworksPlugin) Networks() netconf.Config { return f.config }

// newWiring is the agent's memif wiring over devices and the networks of
// networksConf.
func newWiring(t *testing.T, devices *manager.Manager, networksConf string) *wiring.Handler {
	t.Helper()
	networks, err := netconf.Decode([]byte(networksConf))
	if err != nil {
		t.Fatal(err)
	}
	handler, err := wiring.NewHandler(devices, wiring.Config{}, wiring.Options{Networks: fakeNetworksPlugin{networks}, Recorder: devices})
	if err != nil {
		t.Fatal(err)
	}
	return handler
}

// startPopulatedAgent returns an agent with pod default/web holding two
// memifs (containers app and sidecar) in networks (one of them refused),
// one unbound allocation, and an allocation of an unknown device refused,
// in its event history.
func startPopulatedAgent(t *testing.T, history bool) *agent {
	t.Helper()
	a := startAgentWith(t, history, populatedNetworks)
	app := a.allocate(t, "memif-003")
	sidecar := a.allocate(t, "memif-004", "memif-005")
	a.allocate(t, "memif-007")
	refused := dmapi.NewAllocateDevice(dmapi.DefaultResourceName, []string{"memif-999"})
	if err := a.loop.PushEvent(refused); err != nil {
		t.Fatal(err)
	}
	if err := refused.Wait(t.Context()); err == nil {
		t.Fatal("allocation of the unknown device memif-999 succeeded")
	}
	annotated := web
	annotated.Networks = webNetworks
	devicemanagertest.AddPod(t, a.loop, a.devices, annotated,
		devicemanagertest.Container{Name: "app", Allocation: app}, devicemanagertest.Container{Name: "sidecar", Allocation: sidecar})
	devicemanagertest.WaitForHistory(t, a.loop, 6)
	return a
}

// startAgentAPI serves the real node API over a temp Unix socket.
func startAgentAPI(t *testing.T, devices dmapi.DeviceManagerAPI, history controllerapi.EventHistory) string {
	t.Helper()
	socket := filepath.Join(t.TempDir(), "api.sock")
	srv, err := server.Start(server.Config{SocketPath: socket}, server.NewService(devices, history, server.WatchLimits{}))
	if err != nil {
		t.Fatalf("start API: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("close API: %v", err)
		}
	})
	return socket
}

func runMemifctl(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(t.Context(), args, &out, &errOut)
	return out.String(), errOut.String(), code
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run go test -update to create it): %v", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (go test -update rewrites it)\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

// outputKind says how a golden file is compared.
type outputKind int

const (
	// text is compared as it is.
	text outputKind = iota
	// table is checked for aligned columns, then its event times are
	// replaced and it is laid out again (see normalizeTable).
	table
	// jsonOutput has its event times replaced (see eventTimes).
	jsonOutput
)

// Golden files hold the output with the run's allocation IDs, secrets and
// socket root replaced by placeholders (agent.normalize), and event times
// and durations by "(time)" and "(duration)": the loop stamps events with
// the real clock. Allocation times come from the device manager's fixed
// clock and stay.
func TestOutputMatchesGolden(t *testing.T) {
	populated := startPopulatedAgent(t, true)
	empty := startAgent(t, true)
	for _, tc := range []struct {
		golden string
		agent  *agent
		kind   outputKind
		args   []string
	}{
		{"list", populated, table, []string{"list"}},
		{"list-secrets", populated, table, []string{"list", "--show-secrets"}},
		{"list-json", populated, jsonOutput, []string{"-o", "json", "list"}},
		{"list-json-secrets", populated, jsonOutput, []string{"list", "-o", "json", "--show-secrets"}},
		{"list-empty", empty, text, []string{"list"}},
		{"list-empty-json", empty, text, []string{"list", "-o", "json"}},
		{"get", populated, table, []string{"get", "default/web"}},
		{"get-secrets", populated, table, []string{"get", "default/web", "--show-secrets"}},
		{"get-json", populated, jsonOutput, []string{"get", "-o", "json", "default/web"}},
		{"events", populated, table, []string{"events"}},
		{"events-last", populated, table, []string{"events", "--last", "1"}},
		{"events-json", populated, jsonOutput, []string{"events", "-o", "json"}},
		{"events-empty", empty, text, []string{"events", "--since", "1"}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			stdout, stderr, code := runMemifctl(t, append([]string{"--socket", tc.agent.socket}, tc.args...)...)
			if code != exitOK || stderr != "" {
				t.Fatalf("memifctl %v: exit %d, stderr %q", tc.args, code, stderr)
			}
			got := tc.agent.normalize(stdout)
			switch tc.kind {
			case table:
				got = normalizeTable(t, stdout, tc.agent.normalize)
			case jsonOutput:
				got = eventTimes.ReplaceAllString(got, `"$1": "(time)"`)
			}
			checkGolden(t, tc.golden, got)
		})
	}
}

// eventTimes matches the times of an event record in JSON output.
var eventTimes = regexp.MustCompile(`"(startedAt|finishedAt)": "[^"]*"`)

// cellGap separates the cells of a table row: memifctl pads every cell but
// the last to its column's width plus two spaces.
var cellGap = regexp.MustCompile(` {2,}`)

// normalizeTable checks that every row of output has its cells where the
// header has its columns, normalizes the cells (and replaces those of the
// STARTED and DURATION columns), and lays the table out again with
// memifctl's table writer: placeholders change cell widths. The table
// ends at the first empty line; what follows is text.
func normalizeTable(t *testing.T, output string, normalize func(string) string) string {
	t.Helper()
	output, after, _ := strings.Cut(output, "\n\n")
	if after != "" {
		after = "\n" + normalize(after)
	}
	return normalizeRows(t, output, normalize) + after
}

func normalizeRows(t *testing.T, output string, normalize func(string) string) string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(output, "\n"), "\n")
	header := cellGap.Split(lines[0], -1)
	columns := cellStarts(lines[0])
	var out strings.Builder
	laidOut := newTable(&out)
	for i, line := range lines {
		if starts := cellStarts(line); !slices.Equal(starts, columns) {
			t.Errorf("row %d %q has cells at %v, want them under the header's columns %v", i, line, starts, columns)
		}
		cells := cellGap.Split(line, -1)
		for j := range cells {
			cells[j] = normalize(cells[j])
			if i > 0 && j < len(header) && header[j] == "STARTED" {
				cells[j] = "(time)"
			}
			if i > 0 && j < len(header) && header[j] == "DURATION" {
				cells[j] = "(duration)"
			}
		}
		writeRow(laidOut, cells...)
	}
	if err := laidOut.Flush(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// cellStarts returns the columns (in characters) where the cells of line
// start.
func cellStarts(line string) []int {
	starts := []int{0}
	for _, gap := range cellGap.FindAllStringIndex(line, -1) {
		starts = append(starts, utf8.RuneCountInString(line[:gap[1]]))
	}
	return starts
}

func TestWatchMatchesGolden(t *testing.T) {
	for _, tc := range []struct {
		golden string
		args   []string
		// skipLines is how many lines come before the first change.
		skipLines int
	}{
		{"watch", []string{"watch"}, 1},
		{"watch-json", []string{"watch", "-o", "json"}, 0},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			agent := startAgent(t, false)
			ctx, cancel := context.WithCancel(t.Context())
			reader, writer := io.Pipe()
			exited := make(chan int, 1)
			go func() {
				exited <- run(ctx, append([]string{"--socket", agent.socket}, tc.args...), writer, io.Discard)
				writer.Close()
			}()
			lines := bufio.NewScanner(reader)
			var got strings.Builder
			readLines(t, lines, &got, tc.skipLines)
			<-agent.devices.registered

			allocation := agent.allocate(t, "memif-003")
			devicemanagertest.AddPod(t, agent.loop, agent.devices, web, devicemanagertest.Container{Name: "app", Allocation: allocation})
			devicemanagertest.DeletePod(t, agent.loop, agent.devices, web)
			readLines(t, lines, &got, 3)
			cancel()
			go io.Copy(io.Discard, reader)
			if code := <-exited; code != exitOK {
				t.Errorf("watch interrupted: exit %d, want %d", code, exitOK)
			}
			checkGolden(t, tc.golden, agent.normalize(got.String()))
		})
	}
}

func readLines(t *testing.T, lines *bufio.Scanner, into *strings.Builder, n int) {
	t.Helper()
	for range n {
		if !lines.Scan() {
			t.Fatalf("watch output ended early: %v (so far %q)", lines.Err(), into.String())
		}
		into.WriteString(lines.Text() + "\n")
	}
}
