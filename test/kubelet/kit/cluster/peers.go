package cluster

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Peers are the directories of the binaries a cluster runs, from
// scripts/peers.sh (a cache keyed by version).
type Peers struct {
	// Kubernetes holds kubelet, kube-apiserver, kube-controller-manager,
	// kube-scheduler and kubectl.
	Kubernetes string
	// Etcd holds etcd.
	Etcd string
	// Containerd holds containerd, containerd-shim-runc-v2 and ctr (2.x).
	Containerd string
	// Containerd17 holds the same of containerd 1.7; Start fills it (with
	// BuildContainerd17) only for Runtime Containerd17.
	Containerd17 string
}

// RepoRoot returns the repository's root: the first directory up from the
// working directory that holds scripts/peers.sh (go test runs in the
// package's directory, make demo in test/kubelet).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find the repository root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "scripts", "peers.sh")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("find the repository root: no scripts/peers.sh above the working directory; run from inside the memif-agent repository")
		}
		dir = parent
	}
}

// BuildPeers runs scripts/peers.sh, which builds the peers that are not in
// its cache yet (a fresh machine: tens of minutes; make peers does it
// ahead), and returns where they are.
func BuildPeers() (Peers, error) {
	dirs, err := runPeersScript()
	if err != nil {
		return Peers{}, err
	}
	p := Peers{Kubernetes: dirs["kubernetes"], Etcd: dirs["etcd"], Containerd: dirs["containerd"]}
	if p.Kubernetes == "" || p.Etcd == "" || p.Containerd == "" {
		return Peers{}, fmt.Errorf("scripts/peers.sh printed %v; want kubernetes=, etcd= and containerd= lines", dirs)
	}
	return p, nil
}

// BuildContainerd17 runs scripts/peers.sh containerd17, which builds
// containerd 1.7 unless it is cached (a few minutes of one core from a
// cold Go build cache), and returns its directory. The default peers leave
// it out: only Runtime Containerd17 needs it.
func BuildContainerd17() (string, error) {
	dirs, err := runPeersScript("containerd17")
	if err != nil {
		return "", err
	}
	if dirs["containerd17"] == "" {
		return "", fmt.Errorf("scripts/peers.sh containerd17 printed %v; want a containerd17= line", dirs)
	}
	return dirs["containerd17"], nil
}

// runPeersScript runs scripts/peers.sh with the peers named (none: the
// default ones) and returns the NAME=DIR lines it printed.
func runPeersScript(names ...string) (map[string]string, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(filepath.Join(root, "scripts", "peers.sh"), names...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("build the cluster peers with scripts/peers.sh %s: %w: %s", strings.Join(names, " "), err, stderr.String())
	}
	dirs := map[string]string{}
	scanner := bufio.NewScanner(bytes.NewReader(out))
	for scanner.Scan() {
		if name, dir, ok := strings.Cut(scanner.Text(), "="); ok {
			dirs[name] = dir
		}
	}
	return dirs, nil
}

// version is the version a peer directory is keyed by (etcd-v3.6.16 →
// v3.6.16).
func version(dir string) string {
	_, v, _ := strings.Cut(filepath.Base(dir), "-")
	return v
}
