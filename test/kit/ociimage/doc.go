// Package ociimage writes container images as OCI image-layout archives
// (the format `ctr images import` and `docker load` read), without a
// registry, a base image or an engine: an Image is a list of files, taken
// from the host or given as bytes, plus the config a runtime needs.
//
// It owns the archive format only; what goes into an image (a pause
// process, DPDK's testpmd with its libraries) is the caller's.
//
// Example:
//
//	img := ociimage.Image{Name: "docker.io/library/pause:dev", Entrypoint: []string{"/pause"}}
//	img.Files = append(img.Files, ociimage.File{Path: "/pause", Mode: 0o755, Data: binary})
//	err := img.WriteArchive("/tmp/pause.tar")
package ociimage
