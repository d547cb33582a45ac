package faults

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	memifv1 "github.com/contivpp/memif-agent/api/memif/v1"

	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kubelet/kit/agenttest"
)

// TestBadCheckpointFiles starts the agent over checkpoint files it cannot
// use whole. Each time it starts and stays healthy, keeps what the damage
// did not cover, keeps the bad file aside for the operator, says so loudly
// in its log, and serves Allocate.
func TestBadCheckpointFiles(t *testing.T) {
	valid := validCheckpoint(t)
	cases := []struct {
		name    string
		content []byte
		// journal, when set, is written as the checkpoint's journal.
		journal []byte
		// kept is how many allocations survive: the snapshot's one when
		// only the journal is bad.
		kept int
	}{
		{"garbage", []byte("\x00\x01not a checkpoint\xff"), nil, 0},
		{"truncated", valid[:len(valid)/2], nil, 0},
		{"empty", nil, nil, 0},
		{"tampered secret", tamper(t, valid), nil, 0},
		{"future version", regexp.MustCompile(`"version": [0-9]+`).ReplaceAll(valid, []byte(`"version": 99`)), nil, 0},
		{"garbage journal", valid, []byte("\x00\x00\x00\x10not a journal record at all"), 1},
		// kubelet's own device manager checkpoint, as if checkpoint-path
		// pointed at it.
		{"foreign", []byte(`{"Data":{"PodDeviceEntries":null,"RegisteredDevices":{"contivpp.io/memif":["memif-000"]}},"Checksum":1397734581}`), nil, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := agenttest.New(t, agenttest.Setup{})
			if err := os.MkdirAll(filepath.Dir(a.CheckpointPath), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(a.CheckpointPath, tc.content, 0o600); err != nil {
				t.Fatal(err)
			}
			if tc.journal != nil {
				if err := os.WriteFile(a.CheckpointPath+".journal", tc.journal, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			a.Start()
			a.RequireHealthy()

			aside, _ := filepath.Glob(a.CheckpointPath + ".corrupt-*")
			if len(aside) != 1 {
				t.Fatalf("bad checkpoint moved aside to %v; want one file", aside)
			}
			if kept, err := os.ReadFile(aside[0]); err != nil || !bytes.Equal(kept, tc.content) {
				t.Errorf("%s holds %q (%v); want the bad file unchanged", aside[0], kept, err)
			}
			if log := a.Log(); !strings.Contains(log, "CHECKPOINT DAMAGED") || !strings.Contains(log, aside[0]) {
				t.Errorf("agent log does not say loudly that the checkpoint was damaged and where it went")
			}
			if _, err := allocate(context.Background(), a.PluginClient(), deviceID(1)); err != nil {
				t.Fatalf("Allocate after a bad checkpoint: %v", err)
			}
			if listed := list(t, a); len(listed) != tc.kept+1 {
				t.Errorf("agent lists %d allocations after one Allocate over a bad checkpoint; want %d", len(listed), tc.kept+1)
			}
			a.RequireHealthy()
		})
	}
}

// validCheckpoint runs an agent for one allocation and returns the
// checkpoint snapshot holding it: the agent journals the allocation, and
// the next start compacts the journal into the snapshot.
func validCheckpoint(t *testing.T) []byte {
	t.Helper()
	a := agenttest.New(t, agenttest.Setup{})
	a.Start()
	if _, err := allocate(context.Background(), a.PluginClient(), deviceID(0)); err != nil {
		t.Fatalf("Allocate: %v", err)
	}
	a.Stop()
	a.Start()
	a.Stop()
	content, err := os.ReadFile(a.CheckpointPath)
	if err != nil {
		t.Fatalf("read the checkpoint: %v", err)
	}
	return content
}

// tamper changes one character of the checkpoint's secret.
func tamper(t *testing.T, valid []byte) []byte {
	t.Helper()
	secret := regexp.MustCompile(`"secret":\s*"`).FindIndex(valid)
	if secret == nil {
		t.Fatalf("no secret in the checkpoint:\n%s", valid)
	}
	tampered := bytes.Clone(valid)
	tampered[secret[1]] ^= 1
	return tampered
}

// TestRefusedDeviceRequests sends Allocate requests kubelet should never
// send. Each is refused with InvalidArgument and a message that says what
// was wrong, in bounded length; the allocation made before stays, and the
// agent stays healthy.
func TestRefusedDeviceRequests(t *testing.T) {
	a := agenttest.New(t, agenttest.Setup{DeviceCount: 64})
	a.Start()
	client := a.PluginClient()
	ctx := context.Background()
	first, err := allocate(ctx, client, deviceID(0))
	if err != nil {
		t.Fatalf("Allocate: %v", err)
	}
	tenThousand := make([]string, 10000)
	for i := range tenThousand {
		tenThousand[i] = deviceID(i % 64)
	}
	cases := []struct {
		name     string
		requests [][]string
		wantCode codes.Code
		wantText string
	}{
		{"unknown ID", [][]string{{"memif-999"}}, codes.InvalidArgument, "memif-999"},
		{"hostile ID", [][]string{{"../../etc/passwd"}}, codes.InvalidArgument, "not devices of"},
		{"duplicate ID", [][]string{{deviceID(5), deviceID(5)}}, codes.InvalidArgument, "more than once"},
		{"empty container request", [][]string{{}}, codes.InvalidArgument, "holds no device ID"},
		{"no container request", nil, codes.InvalidArgument, "no container request"},
		{"10,000 IDs", [][]string{tenThousand}, codes.InvalidArgument, "asks for 10000 devices"},
		{"1 MiB ID", [][]string{{deviceID(3), strings.Repeat("memif-", 1<<20/6)}}, codes.InvalidArgument, "holds a device ID of 1048572 bytes"},
		{"second container refused", [][]string{{deviceID(7)}, {"memif-999"}}, codes.InvalidArgument, "container request 2 of 2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			request := &pluginapi.AllocateRequest{}
			for _, ids := range tc.requests {
				request.ContainerRequests = append(request.ContainerRequests, &pluginapi.ContainerAllocateRequest{DevicesIds: ids})
			}
			_, err := client.Allocate(ctx, request)
			got := status.Convert(err)
			if got.Code() != tc.wantCode || !strings.Contains(got.Message(), tc.wantText) {
				t.Fatalf("Allocate = %v; want %s mentioning %q", err, tc.wantCode, tc.wantText)
			}
			// A refusal names the offending IDs, not every ID sent.
			if len(got.Message()) > 1024 {
				t.Errorf("refusal message is %d bytes long; want it bounded:\n%.300s...", len(got.Message()), got.Message())
			}
			a.RequireHealthy()
		})
	}
	poll.Until(t, waitTimeout, "only the first allocation left", func() error {
		return keptExactly(t, a, map[string]granted{first.Mounts[0].HostPath: {device: deviceID(0), response: first}})
	})
	if longest := longestLine(a.Log()); longest > 4096 {
		t.Errorf("the agent logged a %d-byte line; refusals must not log every ID of a hostile request", longest)
	}
}

func longestLine(text string) int {
	longest := 0
	for _, line := range strings.Split(text, "\n") {
		longest = max(longest, len(line))
	}
	return longest
}

// TestMalformedAPINames asks the node API for pods by malformed names: each
// is InvalidArgument naming the problem; a well-formed unknown pod is
// NotFound; nothing is lost and the agent stays healthy.
func TestMalformedAPINames(t *testing.T) {
	a := agenttest.New(t, agenttest.Setup{})
	a.Start()
	if _, err := allocate(context.Background(), a.PluginClient(), deviceID(3)); err != nil {
		t.Fatalf("Allocate: %v", err)
	}
	before := list(t, a)
	api := a.APIClient()
	cases := []struct {
		name      string
		namespace string
		pod       string
		wantCode  codes.Code
	}{
		{"empty namespace", "", "web", codes.InvalidArgument},
		{"empty name", "default", "", codes.InvalidArgument},
		{"upper case", "Default", "web", codes.InvalidArgument},
		{"path traversal", "..", "../../etc", codes.InvalidArgument},
		{"slash in name", "default", "a/b", codes.InvalidArgument},
		{"NUL byte", "default", "web\x00x", codes.InvalidArgument},
		{"newline (log forging)", "default", "web\nlevel=error msg=forged", codes.InvalidArgument},
		{"too long", "default", strings.Repeat("a", 300), codes.InvalidArgument},
		{"too long namespace", strings.Repeat("n", 64), "web", codes.InvalidArgument},
		{"unicode", "default", "wéb", codes.InvalidArgument},
		{"well-formed unknown pod", "default", "nobody", codes.NotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := api.GetPodMemifs(context.Background(), &memifv1.GetPodMemifsRequest{Namespace: tc.namespace, Name: tc.pod, IncludeSecrets: true})
			if status.Code(err) != tc.wantCode || status.Convert(err).Message() == "" {
				t.Fatalf("GetPodMemifs(%q, %q) = %v; want %s with a message", tc.namespace, tc.pod, err, tc.wantCode)
			}
			a.RequireHealthy()
		})
	}
	after := list(t, a)
	if len(after) != len(before) {
		t.Fatalf("allocations changed from %v to %v", before, after)
	}
	for id, allocation := range before {
		if after[id].Secret != allocation.Secret || after[id].HostDir != allocation.HostDir {
			t.Errorf("allocation %s changed: %+v -> %+v", id, allocation, after[id])
		}
	}
	if strings.Contains(a.Log(), "level=error msg=forged") {
		t.Errorf("a pod name with a newline forged a log line")
	}
}
