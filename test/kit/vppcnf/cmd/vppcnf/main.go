// Command vppcnf is the entrypoint of the VPP pod image (package vppcnf):
// it waits for the agent's memif.json and the memif sockets it names,
// writes VPP's startup.conf and setup.cli (package cnfsetup) into its
// runtime directory, and replaces itself with VPP, in the foreground, as
// the memif slave of every interface of memif.json. The secret comes from
// MEMIF_SECRET and is written to setup.cli only (mode 0600), never
// printed.
//
// Built static (CGO_ENABLED=0): the image holds no Go runtime libraries.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/contivpp/memif-agent/plugins/networks/memifjson"
	"github.com/contivpp/memif-agent/test/kit/vppcnf/cnfsetup"
)

const (
	// pollInterval is how often a missing file is looked for.
	pollInterval = 200 * time.Millisecond
	// reportEvery repeats what is still awaited in the container's log.
	reportEvery = 30 * time.Second
	// maxMemifJSON bounds the read of memif.json.
	maxMemifJSON = 1 << 20
)

func main() {
	memifJSON := flag.String("memif-json", "/run/vpp/"+memifjson.FileName, "the agent's memif.json")
	startup := cnfsetup.Startup{}
	flag.StringVar(&startup.Prefix, "vpp", "/vpp", "VPP's prefix (bin/vpp, lib/vpp_plugins)")
	flag.StringVar(&startup.RuntimeDir, "runtime-dir", "/tmp/vpp", "VPP's files and sockets; the pod's own, never the memif directory")
	flag.StringVar(&startup.APIPrefix, "api-prefix", "cnf", "VPP's shared-memory API segment prefix")
	flag.Parse()
	// A container's first process ignores SIGTERM it does not handle: a
	// pod deleted while waiting would wait for its grace period.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	// run returns only when it failed: on success it becomes VPP (exec).
	fmt.Fprintf(os.Stderr, "vppcnf: %v\n", run(ctx, *memifJSON, startup))
	os.Exit(1)
}

// run waits for the agent's memif.json and sockets, then execs VPP with
// the setup they say; it returns only what stopped it.
func run(ctx context.Context, memifJSON string, startup cnfsetup.Startup) error {
	secret := os.Getenv("MEMIF_SECRET")
	if err := waitFor(ctx, memifJSON, isRegular); err != nil {
		return err
	}
	file, err := readMemifJSON(memifJSON)
	if err != nil {
		return err
	}
	script, err := cnfsetup.SetupCLI(file, secret)
	if err != nil {
		return err
	}
	for _, iface := range file.Interfaces {
		if err := waitFor(ctx, iface.Socket, isSocket); err != nil {
			return err
		}
	}
	if err := writeConfig(startup, script); err != nil {
		return err
	}
	shown, _ := cnfsetup.SetupCLI(file, "$MEMIF_SECRET")
	fmt.Printf("vppcnf: starting VPP as the memif slave of %s with %s:\n%s", memifJSON, filepath.Join(startup.RuntimeDir, cnfsetup.SetupCLIName), shown)
	vpp := filepath.Join(startup.Prefix, "bin", "vpp")
	err = syscall.Exec(vpp, []string{vpp, "-c", filepath.Join(startup.RuntimeDir, cnfsetup.StartupConfName)}, os.Environ())
	return fmt.Errorf("run %s: %w", vpp, err)
}

func isRegular(info fs.FileInfo) bool { return info.Mode().IsRegular() }
func isSocket(info fs.FileInfo) bool  { return info.Mode()&fs.ModeSocket != 0 }

// waitFor returns once path is there and is what ready says, saying in
// the log what it waits for.
func waitFor(ctx context.Context, path string, ready func(fs.FileInfo) bool) error {
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	var reported time.Time
	for {
		info, err := os.Stat(path)
		switch {
		case err == nil && ready(info):
			return nil
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("wait for %s: %w", path, err)
		}
		if time.Since(reported) >= reportEvery {
			fmt.Printf("vppcnf: waiting for %s (the agent makes it once the memif is wired)\n", path)
			reported = time.Now()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stopped while waiting for %s", path)
		case <-ticker.C:
		}
	}
}

// readMemifJSON decodes memif.json, leniently: a newer agent may add
// fields.
func readMemifJSON(path string) (memifjson.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return memifjson.File{}, err
	}
	defer f.Close()
	content, err := io.ReadAll(io.LimitReader(f, maxMemifJSON+1))
	if err != nil {
		return memifjson.File{}, fmt.Errorf("read %s: %w", path, err)
	}
	if len(content) > maxMemifJSON {
		return memifjson.File{}, fmt.Errorf("%s is over %d bytes", path, maxMemifJSON)
	}
	var file memifjson.File
	if err := json.Unmarshal(content, &file); err != nil {
		return memifjson.File{}, fmt.Errorf("decode %s: %w", path, err)
	}
	return file, nil
}

// writeConfig writes startup.conf and setup.cli, which holds the secret,
// into the runtime directory, readable by its owner only.
func writeConfig(startup cnfsetup.Startup, script string) error {
	if err := os.MkdirAll(startup.RuntimeDir, 0o700); err != nil {
		return fmt.Errorf("create VPP's runtime directory: %w", err)
	}
	files := map[string]string{
		cnfsetup.StartupConfName: cnfsetup.StartupConf(startup),
		cnfsetup.SetupCLIName:    script,
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(startup.RuntimeDir, name), []byte(content), 0o600); err != nil {
			return fmt.Errorf("write VPP's %s: %w", name, err)
		}
	}
	return nil
}
