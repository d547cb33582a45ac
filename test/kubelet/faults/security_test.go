package faults

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/contivpp/memif-agent/test/kit/dockerd"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/procnet"
	"github.com/contivpp/memif-agent/test/kubelet/kit/agenttest"
)

// TestFileAndSocketModes checks the permissions of everything the agent
// creates, with the loosest umask (0), so that no mode comes from the
// umask by luck: the checkpoint, the API socket and the probe socket are
// root's alone, the socket root lets only root through, each allocation directory has the
// configured mode, and a configured API socket mode is applied.
func TestFileAndSocketModes(t *testing.T) {
	cases := []struct {
		name          string
		nodeapi       string
		wantAPISocket fs.FileMode
		wantAPIDir    fs.FileMode
	}{
		{"default API socket mode", "", 0o600, 0o700},
		{"API socket mode 0660", "socket-mode: \"0660\"\n", 0o660, 0o750},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := agenttest.New(t, agenttest.Setup{NodeAPI: tc.nodeapi})
			old := syscall.Umask(0)
			a.Start()
			syscall.Umask(old)
			response, err := allocate(context.Background(), a.PluginClient(), deviceID(0))
			if err != nil {
				t.Fatalf("Allocate: %v", err)
			}
			allocationDir := response.Mounts[0].HostPath
			wantModes := []struct {
				what string
				path string
				want fs.FileMode
			}{
				{"checkpoint", a.CheckpointPath, 0o600},
				{"checkpoint journal", a.CheckpointPath + ".journal", 0o600},
				{"checkpoint boot", a.CheckpointPath + ".boot", 0o600},
				{"checkpoint directory", filepath.Dir(a.CheckpointPath), 0o700},
				{"API socket", a.APISocket, fs.ModeSocket | tc.wantAPISocket},
				{"API socket directory", filepath.Dir(a.APISocket), fs.ModeDir | tc.wantAPIDir},
				{"device plugin socket", a.PluginSocket, fs.ModeSocket | 0o600},
				{"probe socket", a.ProbeSocket, fs.ModeSocket | 0o600},
				{"socket root", a.SocketRoot, fs.ModeDir | 0o700},
				{"allocation directory (dir-mode 0770)", allocationDir, fs.ModeDir | 0o770},
			}
			for _, w := range wantModes {
				info, err := os.Lstat(w.path)
				if err != nil {
					t.Errorf("%s %s: %v", w.what, w.path, err)
					continue
				}
				got := info.Mode() & (fs.ModeType | fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
				if strings.HasPrefix(w.what, "checkpoint") {
					got &^= fs.ModeDir
				}
				if got != w.want {
					t.Errorf("%s %s has mode %v; want %v", w.what, w.path, got, w.want)
				}
			}
		})
	}
}

// TestNoSecretLeaks runs a busy agent (allocations, refusals, pods bound
// through Docker and released, API reads with secrets) and then looks for
// every secret it handed out in the whole agent log and in every HTTP
// answer but the KV scheduler's, which holds the vswitch side's config.
func TestNoSecretLeaks(t *testing.T) {
	daemon := dockerd.Start(t)
	client := daemon.Client(t)
	image := dockerd.ImportSleeperImage(t, client)
	a := agenttest.New(t, agenttest.Setup{DeviceCount: 32, DockerEndpoint: daemon.Endpoint()})
	a.Start()
	plugin := a.PluginClient()
	ctx := context.Background()

	secrets := map[string]bool{}
	var grants []granted
	for n := range 8 {
		response, err := allocate(ctx, plugin, deviceID(n))
		if err != nil {
			t.Fatalf("Allocate: %v", err)
		}
		secrets[response.Envs[envSecret]] = true
		grants = append(grants, granted{device: deviceID(n), response: response})
	}
	// A refusal's error and log line must not carry a secret either; a held
	// device is taken over now, so the refusal is for a device the node
	// does not have.
	if _, err := allocate(ctx, plugin, deviceID(32)); err == nil {
		t.Fatal("Allocate of an unknown device succeeded")
	}
	holders := createHolders(t, client, image, grants[:4])
	poll.Until(t, waitTimeout, "four allocations bound", func() error {
		bound := 0
		for _, allocation := range list(t, a) {
			if allocation.PodName == "holders" {
				bound++
			}
		}
		if bound != 4 {
			return fmt.Errorf("%d bound", bound)
		}
		return nil
	})
	reportSchedulerDump(t, a, secrets)
	holders.Remove(t, client)
	poll.Until(t, waitTimeout, "the holders' allocations released", func() error {
		if listed := len(list(t, a)); listed != 4 {
			return fmt.Errorf("%d allocations listed, want 4", listed)
		}
		return nil
	})

	bodies := map[string]string{}
	for _, path := range []string{"/controller/event-history", "/metrics", "/readiness", "/liveness"} {
		code, body, err := a.Get(path)
		if err != nil || code != http.StatusOK {
			t.Fatalf("GET %s answered %d: %v", path, code, err)
		}
		bodies["GET "+path] = string(body)
	}
	if !strings.Contains(bodies["GET /controller/event-history"], "AllocateDevice") {
		t.Fatalf("the event history shows no AllocateDevice; the scan would prove nothing:\n%.500s", bodies["GET /controller/event-history"])
	}
	// A restart logs what it restores.
	a.Stop()
	a.Start()
	bodies["agent log"] = a.Log()
	for where, body := range bodies {
		for secret := range secrets {
			if strings.Contains(body, secret) {
				t.Errorf("%s holds a memif secret", where)
				break
			}
		}
	}
}

// reportSchedulerDump logs which of the KV scheduler's REST answers hold
// secrets. They may (the vswitch side's memif config carries them), which
// is one more reason the HTTP server stays on loopback; the test reports
// rather than fails.
func reportSchedulerDump(t *testing.T, a *agenttest.Agent, secrets map[string]bool) {
	for _, path := range []string{"/scheduler/dump", "/scheduler/txn-history", "/scheduler/graph-snapshot", "/scheduler/status"} {
		code, body, err := a.Get(path)
		if err != nil {
			t.Logf("GET %s: %v", path, err)
			continue
		}
		holds := 0
		for secret := range secrets {
			if strings.Contains(string(body), secret) {
				holds++
			}
		}
		t.Logf("GET %s answered %d with %d bytes holding %d of the %d secrets handed out (4 bound to a pod)", path, code, len(body), holds, len(secrets))
	}
}

// TestHTTPOnLoopbackByDefault starts the agent with no http.conf, only a
// port, and checks that it listens on loopback alone.
func TestHTTPOnLoopbackByDefault(t *testing.T) {
	a := agenttest.New(t, agenttest.Setup{})
	if err := os.Remove(filepath.Join(a.ConfigDir, "http.conf")); err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(a.HTTPAddr)
	a.Args = []string{"-http-port", port}
	a.Start()
	addresses, err := procnet.ListeningTCP(a.PID())
	if err != nil {
		t.Fatal(err)
	}
	if len(addresses) == 0 {
		t.Fatal("the agent listens on no TCP address; want its HTTP server on loopback")
	}
	for _, address := range addresses {
		host, _, _ := net.SplitHostPort(address)
		if !net.ParseIP(host).IsLoopback() {
			t.Errorf("the agent listens on %s; want loopback only by default", address)
		}
	}
}
