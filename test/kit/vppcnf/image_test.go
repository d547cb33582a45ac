package vppcnf_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contivpp/memif-agent/test/kit/ociimage"
	"github.com/contivpp/memif-agent/test/kit/vpp"
	"github.com/contivpp/memif-agent/test/kit/vppcnf"
)

// writeRoot writes the image's files into a directory, as a runtime
// unpacks its layer.
func writeRoot(t *testing.T, img ociimage.Image) string {
	t.Helper()
	root := t.TempDir()
	for _, f := range img.Files {
		p := filepath.Join(root, f.Path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		if f.Link != "" {
			err = os.Symlink(f.Link, p)
		} else {
			err = os.WriteFile(p, f.Data, f.Mode)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestImageHoldsEveryLibraryVPPLoads asks the image's own dynamic loader,
// chrooted into the image's root, to resolve VPP, vppctl and the plugins:
// what it cannot find there a pod could not load either.
func TestImageHoldsEveryLibraryVPPLoads(t *testing.T) {
	vpp.Require(t)
	img, err := vppcnf.Image("docker.io/library/memif-vppcnf:test")
	if err != nil {
		t.Fatal(err)
	}
	root := writeRoot(t, img)
	elfs := []string{"/vpp/bin/vpp", "/vpp/bin/vppctl"}
	for _, plugin := range vppcnf.Plugins {
		elfs = append(elfs, "/vpp/lib/vpp_plugins/"+plugin)
	}
	for _, elf := range elfs {
		t.Run(elf, func(t *testing.T) {
			out, err := exec.Command("chroot", root, "/lib64/ld-linux-x86-64.so.2", "--list", elf).CombinedOutput()
			if err != nil || strings.Contains(string(out), "not found") {
				t.Fatalf("the image's loader on %s: %v\n%s", elf, err, out)
			}
			if !strings.Contains(string(out), "libc.so.6 => /lib/") {
				t.Errorf("the image's loader found no libc for %s:\n%s", elf, out)
			}
		})
	}
	t.Run("the entrypoint runs", func(t *testing.T) {
		out, err := exec.Command("chroot", root, vppcnf.EntrypointPath, "-h").CombinedOutput()
		if !strings.Contains(string(out), "-memif-json") {
			t.Fatalf("%s -h: %v\n%s", vppcnf.EntrypointPath, err, out)
		}
	})
}
