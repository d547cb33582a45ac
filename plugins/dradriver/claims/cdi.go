package claims

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	cdispec "tags.cncf.io/container-device-interface/specs-go"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
)

// CDI names of the memif devices: "contivpp.io/memif=<claim UID>-<request>".
const (
	CDIVendor = "contivpp.io"
	CDIClass  = "memif"
	CDIKind   = CDIVendor + "/" + CDIClass
	// cdiVersion is the CDI spec version written; env and mounts need no
	// newer one.
	cdiVersion = "0.6.0"
)

// CDIDeviceName is the CDI device name of one request of a claim: the
// claim UID keeps it unique, so a container runtime's cached spec of an
// earlier claim is never taken for it.
func CDIDeviceName(claimUID, request string) string { return claimUID + "-" + request }

// CDIDeviceID is the fully qualified CDI device ID kubelet hands the
// container runtime.
func CDIDeviceID(claimUID, request string) string {
	return CDIKind + "=" + CDIDeviceName(claimUID, request)
}

// CDISpecName is the file name of a claim's CDI spec, in the CDI's
// transient-spec form (vendor-class_id).
func CDISpecName(claimUID string) string {
	return fmt.Sprintf("%s-%s_%s.json", CDIVendor, CDIClass, claimUID)
}

// The env a container gets of what its request's memifs got from the
// node's networks (dmapi.MemifInfo.Networks). Each lists the request's
// memifs in memif ID order, comma separated, and is set only when a memif
// has a value: a request of one memif gets plain values.
const (
	EnvMemifNetwork    = "MEMIF_NETWORK"
	EnvMemifMode       = "MEMIF_MODE"
	EnvMemifIP         = "MEMIF_IP"
	EnvMemifGateway    = "MEMIF_GATEWAY"
	EnvMemifQueues     = "MEMIF_QUEUES"
	EnvMemifRingSize   = "MEMIF_RING_SIZE"
	EnvMemifBufferSize = "MEMIF_BUFFER_SIZE"
	EnvMemifMTU        = "MEMIF_MTU"
	EnvMemifMAC        = "MEMIF_MAC"
)

// CDISpec is the CDI spec of a prepared claim: one device per request, each
// giving the container MEMIF_SOCKET and MEMIF_SECRET, what its memifs got
// from the node's networks (networkEnv), and mounting the allocation's
// socket directory at containerDir. It holds the secrets: the file must be
// readable by root only.
func CDISpec(claimUID string, prepared []dmapi.PreparedRequest, containerDir string) *cdispec.Spec {
	spec := &cdispec.Spec{Version: cdiVersion, Kind: CDIKind}
	for _, p := range prepared {
		spec.Devices = append(spec.Devices, cdispec.Device{
			Name: CDIDeviceName(claimUID, p.Request),
			ContainerEdits: cdispec.ContainerEdits{
				Env: append([]string{
					dmapi.EnvMemifSocket + "=" + p.Memif.ContainerSocket,
					dmapi.EnvMemifSecret + "=" + p.Memif.Secret,
				}, networkEnv(p.Memif.Networks)...),
				Mounts: []*cdispec.Mount{{
					HostPath:      p.Memif.HostDir,
					ContainerPath: containerDir,
					Type:          "bind",
					Options:       []string{"rbind", "rw", "nosuid", "nodev", "noexec"},
				}},
			},
		})
	}
	return spec
}

// networkEnv is the env of what memifs got from the networks, in memif ID
// order. A memif has at most one address and gateway, so MEMIF_IP and
// MEMIF_GATEWAY hold one value per memif too.
func networkEnv(networks []dmapi.MemifNetwork) []string {
	networks = slices.SortedFunc(slices.Values(networks), func(a, b dmapi.MemifNetwork) int { return cmp.Compare(a.MemifID, b.MemifID) })
	number := func(n uint32) string {
		if n == 0 {
			return ""
		}
		return strconv.FormatUint(uint64(n), 10)
	}
	vars := []struct {
		name  string
		value func(dmapi.MemifNetwork) string
	}{
		{EnvMemifNetwork, func(n dmapi.MemifNetwork) string { return n.Network }},
		{EnvMemifMode, func(n dmapi.MemifNetwork) string { return n.Mode }},
		{EnvMemifIP, func(n dmapi.MemifNetwork) string { return strings.Join(n.IPs, ",") }},
		{EnvMemifGateway, func(n dmapi.MemifNetwork) string { return strings.Join(n.Gateway, ",") }},
		{EnvMemifQueues, func(n dmapi.MemifNetwork) string { return number(n.Queues) }},
		{EnvMemifRingSize, func(n dmapi.MemifNetwork) string { return number(n.RingSize) }},
		{EnvMemifBufferSize, func(n dmapi.MemifNetwork) string { return number(n.BufferSize) }},
		{EnvMemifMTU, func(n dmapi.MemifNetwork) string { return number(n.MTU) }},
		{EnvMemifMAC, func(n dmapi.MemifNetwork) string { return n.MAC }},
	}
	var env []string
	for _, v := range vars {
		values := make([]string, len(networks))
		for i, n := range networks {
			values[i] = v.value(n)
		}
		if slices.ContainsFunc(values, func(value string) bool { return value != "" }) {
			env = append(env, v.name+"="+strings.Join(values, ","))
		}
	}
	return env
}
