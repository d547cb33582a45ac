package testpmd

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

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
	files, err := closure(programs)
	if err != nil {
		return ociimage.Image{}, err
	}
	img.Files = append(img.Files, files...)
	return img, nil
}

// closure returns programs and their libraries as image files. A host file
// reached under a second name (a driver both linked by testpmd and loaded
// as a plugin) becomes a symlink to the first, so the dynamic loader, which
// tells files apart by inode, loads it once.
func closure(programs []string) ([]ociimage.File, error) {
	var files []ociimage.File
	added := map[string]bool{}
	byHostFile := map[string]string{}
	for _, program := range programs {
		paths, err := withLibraries(program)
		if err != nil {
			return nil, err
		}
		for _, p := range paths {
			inImage, err := usrPath(p)
			if err != nil {
				return nil, err
			}
			if added[inImage] {
				continue
			}
			added[inImage] = true
			hostFile, err := filepath.EvalSymlinks(p)
			if err != nil {
				return nil, fmt.Errorf("testpmd: resolve %s: %w", p, err)
			}
			if first, ok := byHostFile[hostFile]; ok {
				files = append(files, ociimage.File{Path: inImage, Link: first})
				continue
			}
			byHostFile[hostFile] = inImage
			file, err := ociimage.HostFile(p)
			if err != nil {
				return nil, err
			}
			file.Path = inImage
			files = append(files, file)
		}
	}
	return files, nil
}

// withLibraries returns program and the shared libraries ldd resolves for
// it, the dynamic loader included.
func withLibraries(program string) ([]string, error) {
	out, err := exec.Command("ldd", program).Output()
	if err != nil {
		return nil, fmt.Errorf("testpmd: ldd %s: %w", program, err)
	}
	paths := []string{program}
	scanner := bufio.NewScanner(bytes.NewReader(out))
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		for i, field := range fields {
			if strings.HasPrefix(field, "/") && (i == 0 || fields[i-1] == "=>") {
				paths = append(paths, field)
			}
		}
	}
	return paths, nil
}

// usrPath is where p lands in a merged-/usr root: its directory with
// symlinks resolved (/lib/x86_64-linux-gnu is /usr/lib/x86_64-linux-gnu),
// its own name kept (a library's soname, not the file it links to).
func usrPath(p string) (string, error) {
	dir, err := filepath.EvalSymlinks(filepath.Dir(p))
	if err != nil {
		return "", fmt.Errorf("testpmd: resolve the directory of %s: %w", p, err)
	}
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("testpmd: add %s to the pod image: %w", p, err)
	}
	return filepath.Join(dir, filepath.Base(p)), nil
}
