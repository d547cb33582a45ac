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
	root, err := RepoRoot()
	if err != nil {
		return Peers{}, err
	}
	cmd := exec.Command(filepath.Join(root, "scripts", "peers.sh"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return Peers{}, fmt.Errorf("build the cluster peers with scripts/peers.sh: %w: %s", err, stderr.String())
	}
	dirs := map[string]string{}
	scanner := bufio.NewScanner(bytes.NewReader(out))
	for scanner.Scan() {
		if name, dir, ok := strings.Cut(scanner.Text(), "="); ok {
			dirs[name] = dir
		}
	}
	p := Peers{Kubernetes: dirs["kubernetes"], Etcd: dirs["etcd"], Containerd: dirs["containerd"]}
	if p.Kubernetes == "" || p.Etcd == "" || p.Containerd == "" {
		return Peers{}, fmt.Errorf("scripts/peers.sh printed %q; want kubernetes=, etcd= and containerd= lines", out)
	}
	return p, nil
}

// version is the version a peer directory is keyed by (etcd-v3.6.16 →
// v3.6.16).
func version(dir string) string {
	_, v, _ := strings.Cut(filepath.Base(dir), "-")
	return v
}
