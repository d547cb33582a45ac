package testpmd

import (
	"archive/tar"
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"time"
)

// PodCommand is the pod side's container command: testpmd as memif client
// on the socket and with the secret that kubelet put in the container's
// environment (MEMIF_SOCKET, MEMIF_SECRET), sending 64-byte packets. The
// shell reads the envs, as kubelet does not expand device plugin envs in a
// command. Counters are printed every second to the container's output
// (PodStats reads them), which also keeps testpmd running without a
// terminal; SIGTERM stops it. The shell first waits for the socket: DPDK's
// memif client gives its port up for good when the socket is not there at
// start, and a pod may well start before its vswitch side listens. A pod side run on the host instead of in a
// container needs its own RuntimeDirEnv, or DPDK writes to the host's
// /var/run/dpdk (and two such pod sides would share a runtime directory,
// which DPDK refuses).
func PodCommand() []string { return PodCommandForwarding("txonly") }

// PodCommandForwarding is PodCommand with testpmd's forwarding mode: txonly
// sends, rxonly counts what arrives (a pod receiving from another pod
// through the vswitch).
func PodCommandForwarding(mode string) []string {
	script := `until [ -S "$MEMIF_SOCKET" ]; do sleep 0.2; done; exec ` + Binary + ` --no-huge -m 256 --no-pci --file-prefix pod -l 1,0` +
		` --log-level=pmd.net.memif,info` +
		` --vdev=net_memif0,role=client,socket="$MEMIF_SOCKET",socket-abstract=no,secret="$MEMIF_SECRET"` +
		` -- -a --forward-mode=` + mode + ` --stats-period 1 --total-num-mbufs=16384`
	return []string{"/bin/sh", "-c", script}
}

// PodStats are the counters a pod side's testpmd last printed.
type PodStats struct {
	// RxPackets and TxPackets count since the port started.
	RxPackets, TxPackets uint64
	// RxPPS and TxPPS are the rates since the print before.
	RxPPS, TxPPS uint64
}

// podStatsLines are testpmd's port statistics, printed every
// --stats-period.
var podStatsLines = map[string]*regexp.Regexp{
	"RX-packets": regexp.MustCompile(`RX-packets:\s+(\d+)`),
	"TX-packets": regexp.MustCompile(`TX-packets:\s+(\d+)`),
	"Rx-pps":     regexp.MustCompile(`Rx-pps:\s+(\d+)`),
	"Tx-pps":     regexp.MustCompile(`Tx-pps:\s+(\d+)`),
}

// ParsePodStats reads the last counters printed in a pod side's output
// (kubectl logs); found is false when it printed none yet.
func ParsePodStats(output string) (stats PodStats, found bool) {
	fields := map[string]*uint64{"RX-packets": &stats.RxPackets, "TX-packets": &stats.TxPackets, "Rx-pps": &stats.RxPPS, "Tx-pps": &stats.TxPPS}
	for name, line := range podStatsLines {
		matches := line.FindAllStringSubmatch(output, -1)
		if len(matches) == 0 {
			return PodStats{}, false
		}
		value, err := strconv.ParseUint(matches[len(matches)-1][1], 10, 64)
		if err != nil {
			return PodStats{}, false
		}
		*fields[name] = value
	}
	return stats, true
}

// PodBinds are the host paths a pod-side container needs besides its memif
// directory: the host's /usr, read-only, for testpmd, its libraries and the
// shell.
func PodBinds() []string {
	return []string{"/usr:/usr:ro"}
}

// PodRootfs is a tar of the pod-side image's root: the merged-/usr
// symlinks (/bin, /lib, /lib64, /sbin into /usr) and the directories the
// runtime and DPDK write to. Import it as an image (docker import); with
// PodBinds it runs PodCommand. It holds no file of its own.
func PodRootfs() ([]byte, error) {
	var buf bytes.Buffer
	archive := tar.NewWriter(&buf)
	modified := time.Unix(0, 0)
	entries := []tar.Header{
		{Name: "usr/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "run/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "var/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "etc/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777},
		{Name: "bin", Typeflag: tar.TypeSymlink, Linkname: "usr/bin", Mode: 0o777},
		{Name: "sbin", Typeflag: tar.TypeSymlink, Linkname: "usr/sbin", Mode: 0o777},
		{Name: "lib", Typeflag: tar.TypeSymlink, Linkname: "usr/lib", Mode: 0o777},
		{Name: "lib64", Typeflag: tar.TypeSymlink, Linkname: "usr/lib64", Mode: 0o777},
		{Name: "var/run", Typeflag: tar.TypeSymlink, Linkname: "../run", Mode: 0o777},
	}
	for _, header := range entries {
		header.ModTime = modified
		if err := archive.WriteHeader(&header); err != nil {
			return nil, fmt.Errorf("pod-side rootfs entry %s: %w", header.Name, err)
		}
	}
	if err := archive.Close(); err != nil {
		return nil, fmt.Errorf("pod-side rootfs: %w", err)
	}
	return buf.Bytes(), nil
}
