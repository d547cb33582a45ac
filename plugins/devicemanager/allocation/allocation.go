package allocation

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"time"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/devicemanager/checkpoint"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

// Allocation is one answer to one container request of kubelet's Allocate.
type Allocation struct {
	// ID names the allocation and its directory under the socket root.
	ID        string
	DeviceIDs []string
	// HostDir is the allocation's directory on the host; HostSocket the
	// socket in it; ContainerSocket the socket's path in the container.
	HostDir         string
	HostSocket      string
	ContainerSocket string
	// Secret is the memif shared secret. Never log it.
	Secret      string
	AllocatedAt time.Time
	// Pod, PodUID and ContainerName are the holder, once known.
	Pod           podapi.PodID
	PodUID        string
	ContainerName string
	// ClaimUID and Request name the ResourceClaim request the allocation
	// was prepared for; empty for kubelet's Allocate. kubelet releases a
	// claim's allocations (NodeUnprepareResources), so collection leaves
	// them alone. ClaimNamespace and ClaimName let the DRA driver read
	// the claim by name at start instead of listing every claim; empty in
	// allocations a checkpoint from before they were kept holds.
	ClaimUID       string
	ClaimNamespace string
	ClaimName      string
	Request        string
}

// Bound tells whether the allocation's pod is known.
func (a Allocation) Bound() bool { return a.Pod != (podapi.PodID{}) }

// String describes the allocation for logs, without the secret.
func (a Allocation) String() string { return a.Info().String() }

// Info returns the allocation as the device manager API shows it.
func (a Allocation) Info() dmapi.MemifInfo {
	return dmapi.MemifInfo{
		AllocationID:    a.ID,
		DeviceIDs:       slices.Clone(a.DeviceIDs),
		Pod:             a.Pod,
		PodUID:          a.PodUID,
		ContainerName:   a.ContainerName,
		HostDir:         a.HostDir,
		HostSocket:      a.HostSocket,
		ContainerSocket: a.ContainerSocket,
		Secret:          a.Secret,
		AllocatedAt:     a.AllocatedAt,
		Claim:           dmapi.ClaimRef{UID: a.ClaimUID, Namespace: a.ClaimNamespace, Name: a.ClaimName},
		Request:         a.Request,
	}
}

func (a Allocation) clone() Allocation {
	a.DeviceIDs = slices.Clone(a.DeviceIDs)
	return a
}

// DeviceIDs returns the IDs of count devices (see the package doc).
func DeviceIDs(count int) []string {
	ids := make([]string, count)
	for i := range ids {
		ids[i] = deviceID(i, count)
	}
	return ids
}

func deviceID(number, count int) string {
	width := max(3, len(fmt.Sprint(count-1)))
	return fmt.Sprintf("memif-%0*d", width, number)
}

// ClaimDeviceIDs returns the IDs of count devices handed out through
// ResourceClaims (see the package doc). They differ from DeviceIDs' so that
// kubelet's device plugin and the DRA driver never hand out the same device.
func ClaimDeviceIDs(count int) []string {
	ids := make([]string, count)
	width := max(3, len(fmt.Sprint(count-1)))
	for i := range ids {
		ids[i] = fmt.Sprintf("%s%0*d", claimDevicePrefix, width, i)
	}
	return ids
}

const claimDevicePrefix = "memif-dra-"

// secretBytes random bytes (136 bits) encode to 23 base64url characters:
// the longest secret memif carries (its 24-byte field ends with a NUL, in
// VPP's API and in the memif protocol), and printable so that it survives
// envs and annotations unchanged.
const secretBytes = 17

// NewSecret returns a fresh memif secret from crypto/rand.
func NewSecret() (string, error) {
	raw := make([]byte, secretBytes)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("generate memif secret: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(raw), nil
}

// NewID returns a fresh allocation ID: the first device ID, for operators
// reading the socket root, and a random suffix, so that a directory left by
// an earlier allocation of the same device is never reused.
func NewID(deviceIDs []string) (string, error) {
	suffix := make([]byte, 4)
	if _, err := rand.Read(suffix); err != nil {
		return "", fmt.Errorf("generate allocation ID: %w", err)
	}
	first := "memif"
	if len(deviceIDs) > 0 {
		first = deviceIDs[0]
	}
	return first + "-" + hex.EncodeToString(suffix), nil
}

// idPattern matches what NewID returns.
var idPattern = regexp.MustCompile(`^(memif(-dra)?(-[0-9]+)?)-[0-9a-f]{8}$`)

// DeviceOfID returns the first device ID of the allocation id names
// (NewID), and whether id has the form of an allocation ID.
func DeviceOfID(id string) (string, bool) {
	match := idPattern.FindStringSubmatch(id)
	if match == nil {
		return "", false
	}
	return match[1], true
}

// ToCheckpoint converts allocations to their persisted form.
func ToCheckpoint(allocations []Allocation) checkpoint.Data {
	data := checkpoint.Data{Allocations: make([]checkpoint.Allocation, 0, len(allocations))}
	for _, a := range allocations {
		data.Allocations = append(data.Allocations, checkpoint.Allocation{
			ID: a.ID, DeviceIDs: slices.Clone(a.DeviceIDs), HostDir: a.HostDir, HostSocket: a.HostSocket,
			ContainerSocket: a.ContainerSocket, Secret: a.Secret, AllocatedAt: a.AllocatedAt,
			PodNamespace: a.Pod.Namespace, PodName: a.Pod.Name, PodUID: a.PodUID, ContainerName: a.ContainerName,
			ClaimUID: a.ClaimUID, ClaimNamespace: a.ClaimNamespace, ClaimName: a.ClaimName, Request: a.Request,
		})
	}
	return data
}

// FromCheckpoint converts persisted allocations back.
func FromCheckpoint(data checkpoint.Data) []Allocation {
	allocations := make([]Allocation, 0, len(data.Allocations))
	for _, a := range data.Allocations {
		allocations = append(allocations, Allocation{
			ID: a.ID, DeviceIDs: slices.Clone(a.DeviceIDs), HostDir: a.HostDir, HostSocket: a.HostSocket,
			ContainerSocket: a.ContainerSocket, Secret: a.Secret, AllocatedAt: a.AllocatedAt,
			Pod: podapi.PodID{Namespace: a.PodNamespace, Name: a.PodName}, PodUID: a.PodUID, ContainerName: a.ContainerName,
			ClaimUID: a.ClaimUID, ClaimNamespace: a.ClaimNamespace, ClaimName: a.ClaimName, Request: a.Request,
		})
	}
	return allocations
}
