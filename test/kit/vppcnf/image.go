package vppcnf

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/contivpp/memif-agent/test/kit/ociimage"
	"github.com/contivpp/memif-agent/test/kit/vpp"
)

const (
	// Prefix is where the image holds VPP.
	Prefix = "/vpp"
	// EntrypointPath is the entrypoint in the image.
	EntrypointPath = "/vppcnf"
	// RuntimeDir is where the entrypoint puts startup.conf, setup.cli and
	// VPP's sockets, in the container's own /tmp.
	RuntimeDir = "/tmp/vpp"
	// CLISocket is the pod's VPP's CLI socket.
	CLISocket = RuntimeDir + "/cli.sock"
	// Vppctl is vppctl in the image.
	Vppctl = Prefix + "/bin/vppctl"
)

// Capabilities are what the pod's container needs added: IPC_LOCK for
// VPP's locked memory, SYS_NICE for its thread priorities and affinity,
// NET_ADMIN for its interfaces.
var Capabilities = []string{"IPC_LOCK", "SYS_NICE", "NET_ADMIN"}

// Plugins are the VPP plugins the image holds and VPP loads.
var Plugins = []string{"memif_plugin.so", "ping_plugin.so"}

// Image returns the VPP pod image named name, made from the host's files:
// VPP from scripts/vpp.sh at Prefix (bin, the core libraries with their
// links, Plugins), every host library ldd names for them with the
// merged-/usr links of a Debian root, and the static entrypoint at
// EntrypointPath, built with the go command.
func Image(name string) (ociimage.Image, error) {
	prefix, err := vpp.Prefix()
	if err != nil {
		return ociimage.Image{}, fmt.Errorf("vppcnf: build the pod image: %w", err)
	}
	entrypoint, err := Entrypoint()
	if err != nil {
		return ociimage.Image{}, err
	}
	img := ociimage.Image{
		Name:       name,
		Entrypoint: []string{EntrypointPath},
		Env:        []string{"PATH=" + Prefix + "/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
		Files: []ociimage.File{
			{Path: EntrypointPath, Mode: 0o755, Data: entrypoint},
			{Path: "/tmp/.keep", Mode: 0o644},
			{Path: "/run/.keep", Mode: 0o644},
		},
	}
	for _, link := range []string{"bin", "sbin", "lib", "lib64"} {
		img.Files = append(img.Files, ociimage.File{Path: "/" + link, Link: "usr/" + link})
	}
	vppFiles, elfs, err := prefixFiles(prefix)
	if err != nil {
		return ociimage.Image{}, err
	}
	img.Files = append(img.Files, vppFiles...)
	hostLibraries, err := hostLibraries(prefix, elfs)
	if err != nil {
		return ociimage.Image{}, err
	}
	img.Files = append(img.Files, hostLibraries...)
	return img, nil
}

// prefixFiles returns VPP's files as image files under Prefix, and the
// host paths of its programs and shared objects.
func prefixFiles(prefix string) (files []ociimage.File, elfs []string, err error) {
	libraries, err := filepath.Glob(filepath.Join(prefix, "lib", "*.so*"))
	if err != nil {
		return nil, nil, fmt.Errorf("vppcnf: list VPP's libraries: %w", err)
	}
	paths := append([]string{filepath.Join(prefix, "bin", "vpp"), filepath.Join(prefix, "bin", "vppctl")}, libraries...)
	for _, plugin := range Plugins {
		paths = append(paths, filepath.Join(prefix, "lib", "vpp_plugins", plugin))
	}
	for _, p := range paths {
		inImage := filepath.Join(Prefix, strings.TrimPrefix(p, prefix))
		info, err := os.Lstat(p)
		if err != nil {
			return nil, nil, fmt.Errorf("vppcnf: VPP at %s lacks a file the image needs: %w", prefix, err)
		}
		// VPP's libraries are found by soname, linked to the versioned
		// file: keep the links.
		if info.Mode()&os.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			if err != nil {
				return nil, nil, fmt.Errorf("vppcnf: %w", err)
			}
			files = append(files, ociimage.File{Path: inImage, Link: target})
			continue
		}
		file, err := ociimage.HostFile(p)
		if err != nil {
			return nil, nil, fmt.Errorf("vppcnf: %w", err)
		}
		file.Path = inImage
		files = append(files, file)
		elfs = append(elfs, p)
	}
	return files, elfs, nil
}

// hostLibraries returns the host libraries ldd names for elfs, outside
// VPP's prefix, with their own libraries, and libgcc_s, which glibc loads
// when a thread is cancelled and no ldd shows.
func hostLibraries(prefix string, elfs []string) ([]ociimage.File, error) {
	var libraries []string
	for _, elf := range elfs {
		paths, err := ociimage.SharedLibraries(elf)
		if err != nil {
			return nil, fmt.Errorf("vppcnf: %w", err)
		}
		for _, p := range paths {
			if p = filepath.Clean(p); !strings.HasPrefix(p, prefix+"/") && !slices.Contains(libraries, p) {
				libraries = append(libraries, p)
			}
		}
	}
	libgcc, err := filepath.Glob("/usr/lib/*/libgcc_s.so.1")
	if err != nil || len(libgcc) == 0 {
		return nil, fmt.Errorf("vppcnf: build the pod image: no libgcc_s.so.1 in /usr/lib/*/ (install libgcc-s1)")
	}
	files, err := ociimage.HostPrograms(append(libraries, libgcc[0])...)
	if err != nil {
		return nil, fmt.Errorf("vppcnf: build the pod image: %w", err)
	}
	return files, nil
}

// Entrypoint builds cmd/vppcnf static (CGO_ENABLED=0) with the go command
// and returns the binary.
func Entrypoint() ([]byte, error) {
	_, file, _, _ := runtime.Caller(0)
	dir, err := os.MkdirTemp("", "vppcnf-build")
	if err != nil {
		return nil, fmt.Errorf("vppcnf: build the entrypoint: %w", err)
	}
	defer os.RemoveAll(dir)
	binary := filepath.Join(dir, "vppcnf")
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", binary, "./cmd/vppcnf")
	build.Dir = filepath.Dir(file)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("vppcnf: build the entrypoint in %s: %w: %s", build.Dir, err, out)
	}
	content, err := os.ReadFile(binary)
	if err != nil {
		return nil, fmt.Errorf("vppcnf: read the built entrypoint: %w", err)
	}
	return content, nil
}
