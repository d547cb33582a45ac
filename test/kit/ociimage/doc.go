// Package ociimage writes container images as OCI image-layout archives
// (the format `ctr images import` and `docker load` read), without a
// registry, a base image or an engine: an Image is a list of files, taken
// from the host or given as bytes, plus the config a runtime needs.
//
// HostPrograms collects host programs with the shared libraries ldd
// resolves for them, at their paths in a merged-/usr root. The archive
// format and that collection are all it owns; what goes into an image (a
// pause process, DPDK's testpmd, VPP) is the caller's.
//
// Example:
//
//	img := ociimage.Image{Name: "docker.io/library/pause:dev", Entrypoint: []string{"/pause"}}
//	img.Files = append(img.Files, ociimage.File{Path: "/pause", Mode: 0o755, Data: binary})
//	err := img.WriteArchive("/tmp/pause.tar")
package ociimage
