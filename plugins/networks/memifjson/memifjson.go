package memifjson

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"

	"github.com/contivpp/memif-agent/internal/securedir"
)

const (
	// FileName is the file's name in the allocation's directory.
	FileName = "memif.json"
	// FileMode lets the agent write it and the directory's group read it.
	FileMode = 0o640
)

// Interface is one memif as the pod learns it.
type Interface struct {
	MemifID uint32 `json:"memif-id"`
	// Socket is the memif socket's path in the container.
	Socket string `json:"socket"`
	// Network is empty for a memif in no network.
	Network string `json:"network,omitempty"`
	// Mode is "ip" or "ethernet".
	Mode string `json:"mode"`
	// IPs are the pod-side addresses with the subnet's prefix length.
	IPs     []netip.Prefix `json:"ips,omitempty"`
	Gateway []netip.Addr   `json:"gateway,omitempty"`
	// MAC is the pod side's, when the spec set one.
	MAC        string `json:"mac,omitempty"`
	Queues     uint32 `json:"queues"`
	RingSize   uint32 `json:"ring-size"`
	BufferSize uint32 `json:"buffer-size"`
	// MTU is 0 when the vswitch's default applies.
	MTU uint32 `json:"mtu,omitempty"`
}

// File is memif.json.
type File struct {
	Interfaces []Interface `json:"interfaces"`
}

// Render returns memif.json for interfaces, ordered by memif ID; two
// interfaces with one memif ID are refused (one socket holds each ID
// once).
func Render(interfaces []Interface) ([]byte, error) {
	sorted := slices.SortedFunc(slices.Values(interfaces), func(a, b Interface) int { return cmp.Compare(a.MemifID, b.MemifID) })
	for i := 1; i < len(sorted); i++ {
		if sorted[i].MemifID == sorted[i-1].MemifID {
			return nil, fmt.Errorf("render %s: memif ID %d is listed twice", FileName, sorted[i].MemifID)
		}
	}
	for _, iface := range sorted {
		if iface.Mode != "ip" && iface.Mode != "ethernet" {
			return nil, fmt.Errorf("render %s: memif %d has mode %q, want ip or ethernet", FileName, iface.MemifID, iface.Mode)
		}
	}
	content, err := json.MarshalIndent(File{Interfaces: append([]Interface{}, sorted...)}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", FileName, err)
	}
	return append(content, '\n'), nil
}

// Write replaces memif.json in dir, the allocation's directory, by
// content, atomically: a reader sees the old file or the new one whole.
// Nothing is synced: the wiring writes the file again at its first
// render after every start of the agent, so the copy the kernel holds is
// all a reader ever needs (and the socket root is tmpfs on a node).
func Write(dir *securedir.Dir, content []byte) error {
	gid, err := dir.Group()
	if err != nil {
		return fmt.Errorf("write %s: %w", dir.Join(FileName), err)
	}
	tempName, temp, err := dir.CreateTemp(FileName, 0o600)
	if err != nil {
		return fmt.Errorf("write %s: create a temporary file: %w", dir.Join(FileName), err)
	}
	if err := fill(temp, content, gid); err != nil {
		return errors.Join(fmt.Errorf("write %s: %w", dir.Join(tempName), err), dir.Remove(tempName))
	}
	if err := dir.Rename(tempName, FileName); err != nil {
		return errors.Join(fmt.Errorf("write %s: %w", dir.Join(FileName), err), dir.Remove(tempName))
	}
	return nil
}

// fill gives the file its group and mode (through its descriptor), then
// its content.
func fill(f *os.File, content []byte, gid int) error {
	err := f.Chown(-1, gid)
	if err == nil {
		err = f.Chmod(FileMode)
	}
	if err == nil {
		_, err = f.Write(content)
	}
	return errors.Join(err, f.Close())
}
