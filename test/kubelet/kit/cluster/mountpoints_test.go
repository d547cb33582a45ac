package cluster

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/contivpp/memif-agent/test/kit/needs"
)

// Two node namespaces bind their own directories over one mount point
// that the first made on the host. The first closing must leave the
// second's mount alone (the kernel unmounts it if the host's directory
// goes); the last one out removes the mount point.
func TestMountPointOutlivesTheClusterThatMadeIt(t *testing.T) {
	needs.Root(t, "binds a directory in a mount namespace of its own")
	stateDir, work := t.TempDir(), t.TempDir()
	mountPoint := filepath.Join(work, "host", "run", "cdi")

	first, err := holdMountPoints(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.create(mountPoint); err != nil {
		t.Fatal(err)
	}
	second, err := holdMountPoints(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := second.create(mountPoint); err != nil {
		t.Fatal(err)
	}
	secondNode := &mountNamespace{root: filepath.Join(work, "second"), mountPoints: second}
	holder, err := startProcess(t.TempDir(), "mount-namespace", nil, "unshare", "--mount", "--propagation", "private", "sleep", "infinity")
	if err != nil {
		t.Fatal(err)
	}
	secondNode.holder = holder
	t.Cleanup(func() { _ = holder.stop() })
	if err := secondNode.waitUnshared(); err != nil {
		t.Fatal(err)
	}
	source := filepath.Join(work, "second-cdi")
	if err := os.MkdirAll(source, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(source, "spec.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := secondNode.command("mount", "--bind", source, mountPoint).CombinedOutput(); err != nil {
		t.Fatalf("bind %s over %s: %v: %s", source, mountPoint, err, out)
	}

	first.release()
	if out, err := secondNode.command("cat", filepath.Join(mountPoint, "spec.json")).CombinedOutput(); err != nil {
		t.Fatalf("after the first cluster closed, the second's node cannot read %s through its mount: %v: %s", mountPoint, err, out)
	}

	_ = holder.stop()
	second.release()
	if _, err := os.Stat(mountPoint); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("mount point %s after the last cluster closed: %v; want it removed", mountPoint, err)
	}
	if _, err := os.Stat(filepath.Dir(mountPoint)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("parent %s made for the mount point after the last cluster closed: %v; want it removed", filepath.Dir(mountPoint), err)
	}
}
