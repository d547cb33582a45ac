package testpmd

import (
	"fmt"
	"os/exec"
	"path/filepath"

	"github.com/contivpp/memif-agent/test/kit/ociimage"
)

// PodImagePlugins are the DPDK drivers the pod side loads from DPDK's
// plugin directory: the vdev bus, the ring mempool and the memif driver.
// testpmd loads every driver in that directory, so the image holds only
// these.
var PodImagePlugins = []string{"librte_bus_vdev.so", "librte_mempool_ring.so", "librte_net_memif.so"}

// PodImage returns the image of docker/Dockerfile.testpmd (the example
// pod's memif-testpmd) made from the host's files, without a registry or
// the Debian mirror: dpdk-testpmd, /bin/sh, sleep, PodImagePlugins, libgcc_s, and every
// shared library ldd says they load, with the merged-/usr symlinks of a
// Debian root. Its entrypoint is dpdk-testpmd, as the Dockerfile's.
func PodImage(name string) (ociimage.Image, error) {
	testpmd, err := exec.LookPath(Binary)
	if err != nil {
		return ociimage.Image{}, fmt.Errorf("testpmd: build the pod image: %w (install dpdk-dev)", err)
	}
	pluginDirs, err := filepath.Glob("/usr/lib/*/dpdk/pmds-*")
	if err != nil || len(pluginDirs) != 1 {
		return ociimage.Image{}, fmt.Errorf("testpmd: build the pod image: want one DPDK plugin directory, found %v (install dpdk-dev)", pluginDirs)
	}
	// glibc loads libgcc_s when a thread is cancelled, as testpmd does on
	// exit; no ldd shows it.
	libgcc, err := filepath.Glob("/usr/lib/*/libgcc_s.so.1")
	if err != nil || len(libgcc) == 0 {
		return ociimage.Image{}, fmt.Errorf("testpmd: build the pod image: no libgcc_s.so.1 in /usr/lib/*/ (install libgcc-s1)")
	}
	// sleep: a pod's shell waits with it for the vswitch's socket.
	programs := []string{testpmd, "/bin/sh", "/usr/bin/sleep", libgcc[0]}
	for _, plugin := range PodImagePlugins {
		programs = append(programs, filepath.Join(pluginDirs[0], plugin))
	}
	img := ociimage.Image{
		Name:       name,
		Entrypoint: []string{"/usr/bin/" + Binary},
		Env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
	}
	for _, link := range []string{"bin", "sbin", "lib", "lib64"} {
		img.Files = append(img.Files, ociimage.File{Path: "/" + link, Link: "usr/" + link})
	}
	// DPDK keeps its runtime directory in /var/run/dpdk.
	img.Files = append(img.Files, ociimage.File{Path: "/tmp/.keep", Mode: 0o644},
		ociimage.File{Path: "/run/.keep", Mode: 0o644}, ociimage.File{Path: "/var/run", Link: "../run"})
	files, err := ociimage.HostPrograms(programs...)
	if err != nil {
		return ociimage.Image{}, fmt.Errorf("testpmd: build the pod image: %w", err)
	}
	img.Files = append(img.Files, files...)
	return img, nil
}
