package ociimage

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// HostPrograms returns the host's programs (or shared objects) and every
// shared library ldd resolves for them as image files at the paths they
// have in a merged-/usr root (/lib/x86_64-linux-gnu/libc.so.6 lands in
// /usr/lib/x86_64-linux-gnu). A host file reached under a second name (a
// driver both linked by a program and loaded as a plugin) becomes a
// symlink to the first, so the dynamic loader, which tells files apart by
// inode, loads it once. The image needs the merged-/usr links (/lib,
// /lib64, /bin into /usr) for the loader's own path.
func HostPrograms(programs ...string) ([]File, error) {
	var files []File
	added := map[string]bool{}
	byHostFile := map[string]string{}
	for _, program := range programs {
		libraries, err := SharedLibraries(program)
		if err != nil {
			return nil, err
		}
		for _, p := range append([]string{program}, libraries...) {
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
				return nil, fmt.Errorf("ociimage: resolve %s: %w", p, err)
			}
			if first, ok := byHostFile[hostFile]; ok {
				files = append(files, File{Path: inImage, Link: first})
				continue
			}
			byHostFile[hostFile] = inImage
			file, err := HostFile(p)
			if err != nil {
				return nil, err
			}
			file.Path = inImage
			files = append(files, file)
		}
	}
	return files, nil
}

// SharedLibraries returns the paths of the shared libraries ldd resolves
// for the program or shared object at path, the dynamic loader included;
// a library ldd does not find is left out.
func SharedLibraries(path string) ([]string, error) {
	out, err := exec.Command("ldd", path).Output()
	if err != nil {
		return nil, fmt.Errorf("ociimage: ldd %s: %w", path, err)
	}
	var paths []string
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
		return "", fmt.Errorf("ociimage: resolve the directory of %s: %w", p, err)
	}
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("ociimage: add %s to the image: %w", p, err)
	}
	return filepath.Join(dir, filepath.Base(p)), nil
}
