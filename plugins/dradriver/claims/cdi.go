package claims

import (
	"fmt"

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

// CDISpec is the CDI spec of a prepared claim: one device per request, each
// giving the container MEMIF_SOCKET and MEMIF_SECRET and mounting the
// allocation's socket directory at containerDir. It holds the secrets: the
// file must be readable by root only.
func CDISpec(claimUID string, prepared []dmapi.PreparedRequest, containerDir string) *cdispec.Spec {
	spec := &cdispec.Spec{Version: cdiVersion, Kind: CDIKind}
	for _, p := range prepared {
		spec.Devices = append(spec.Devices, cdispec.Device{
			Name: CDIDeviceName(claimUID, p.Request),
			ContainerEdits: cdispec.ContainerEdits{
				Env: []string{
					dmapi.EnvMemifSocket + "=" + p.Memif.ContainerSocket,
					dmapi.EnvMemifSecret + "=" + p.Memif.Secret,
				},
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
