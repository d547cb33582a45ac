package deviceinfo

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/contivpp/memif-agent/internal/securedir"
)

// The spec's names and this package's choices.
const (
	// DefaultDir is the spec's directory of the device plugins' files.
	DefaultDir = "/var/run/k8s.cni.cncf.io/devinfo/dp"
	// SpecVersion is the spec version the files follow.
	SpecVersion = "1.1.0"
	// TypeMemif is the spec's device type of a memif.
	TypeMemif = "memif"
	// RoleSlave: the host made the socket, the container attaches to it
	// (the pod's side of every memif here); RoleMaster: the container
	// makes it.
	RoleSlave  = "slave"
	RoleMaster = "master"
	// ModeEthernet and ModeIP are the memif modes.
	ModeEthernet = "ethernet"
	ModeIP       = "ip"
	// FileMode: readable by all, as every writer of these files makes
	// them; nothing in them is secret.
	FileMode = 0o644
	// dirMode is the mode of the directory when Files makes it.
	dirMode = 0o755

	fileSuffix = "-device.json"
)

// ErrFile is matched (errors.Is) by every failure to write or remove a
// device-info file.
var ErrFile = errors.New("device-info file")

// DeviceInfo is the spec's device-info map, for the type memif.
type DeviceInfo struct {
	Type    string `json:"type"`
	Version string `json:"version"`
	Memif   *Memif `json:"memif,omitempty"`
}

// Memif is the spec's "memif" map.
type Memif struct {
	Role string `json:"role"`
	Path string `json:"path"`
	Mode string `json:"mode"`
}

// NewMemif is the device-info of a memif the pod attaches to as the
// slave, at socket path (as the container sees it), in mode.
func NewMemif(path, mode string) DeviceInfo {
	return DeviceInfo{Type: TypeMemif, Version: SpecVersion, Memif: &Memif{Role: RoleSlave, Path: path, Mode: mode}}
}

// Device is one device's file content.
type Device struct {
	ID   string
	Info DeviceInfo
}

// FileName is the spec's file name of resourceName's device deviceID:
// each "/" in either becomes "-" (as the Network Plumbing WG's client
// library names it).
func FileName(resourceName, deviceID string) string {
	return strings.ReplaceAll(resourceName, "/", "-") + "-" + strings.ReplaceAll(deviceID, "/", "-") + fileSuffix
}

// Files are one resource's device-info files in one directory. The zero
// directory writes nothing.
type Files struct {
	dir      string
	resource string
}

// New returns resourceName's files in dir; an empty dir writes none.
func New(dir, resourceName string) *Files {
	return &Files{dir: dir, resource: resourceName}
}

// Enabled tells whether Files writes anything.
func (f *Files) Enabled() bool { return f.dir != "" }

// Path is the path of deviceID's file ("" when disabled).
func (f *Files) Path(deviceID string) string {
	if !f.Enabled() {
		return ""
	}
	return filepath.Join(f.dir, FileName(f.resource, deviceID))
}

// Write writes each device's file, atomically, unless it already holds
// that content. On failure it removes the files it wrote or found
// holding other content, and says which failed.
func (f *Files) Write(devices []Device) error {
	return f.write(devices, sameContent)
}

// Ensure writes each device's file unless it is a memif's with the same
// role and path: its mode stays, since only the memif wiring knows it
// and it tells it after a start (Write). The device manager calls it at
// its start for every held device, so that a file a reboot emptied, or a
// write a crash cut short, is whole again.
func (f *Files) Ensure(devices []Device) error {
	return f.write(devices, sameSocket)
}

func (f *Files) write(devices []Device, keep func(old []byte, want DeviceInfo) bool) error {
	if !f.Enabled() || len(devices) == 0 {
		return nil
	}
	dir, err := f.open()
	if err != nil {
		return err
	}
	defer dir.Close()
	var touched []string
	for _, d := range devices {
		name := FileName(f.resource, d.ID)
		if old, err := dir.ReadFile(name); err == nil && keep(old, d.Info) {
			continue
		}
		touched = append(touched, name)
		if err := writeFile(dir, name, d.Info); err != nil {
			err = fmt.Errorf("%w: write %s for device %s: %w", ErrFile, dir.Join(name), d.ID, err)
			return errors.Join(err, removeAll(dir, touched))
		}
	}
	return nil
}

// sameContent: old is exactly want's file.
func sameContent(old []byte, want DeviceInfo) bool {
	content, err := render(want)
	return err == nil && string(old) == string(content)
}

// sameSocket: old is a memif's file of want's role and path, in a valid
// mode.
func sameSocket(old []byte, want DeviceInfo) bool {
	var got DeviceInfo
	if json.Unmarshal(old, &got) != nil || got.Memif == nil || want.Memif == nil {
		return false
	}
	return got.Type == want.Type && got.Version == want.Version && got.Memif.Role == want.Memif.Role &&
		got.Memif.Path == want.Memif.Path && (got.Memif.Mode == ModeEthernet || got.Memif.Mode == ModeIP)
}

func render(info DeviceInfo) ([]byte, error) {
	content, err := json.Marshal(info)
	if err != nil {
		return nil, err
	}
	return append(content, '\n'), nil
}

// writeFile replaces name by info's file: a temporary file in the
// directory, its mode set through its descriptor (the umask cut it),
// renamed over name. A reader sees the old file or the new one whole.
func writeFile(dir *securedir.Dir, name string, info DeviceInfo) error {
	content, err := render(info)
	if err != nil {
		return err
	}
	tempName, temp, err := dir.CreateTemp(name, 0o600)
	if err != nil {
		return fmt.Errorf("create a temporary file: %w", err)
	}
	err = temp.Chmod(FileMode)
	if err == nil {
		_, err = temp.Write(content)
	}
	if err = errors.Join(err, temp.Close()); err == nil {
		err = dir.Rename(tempName, name)
	}
	if err != nil {
		return errors.Join(err, dir.Remove(tempName))
	}
	return nil
}

// Remove removes the files of deviceIDs; one already gone is no error.
func (f *Files) Remove(deviceIDs []string) error {
	if !f.Enabled() || len(deviceIDs) == 0 {
		return nil
	}
	dir, err := f.open()
	if err != nil {
		return err
	}
	defer dir.Close()
	names := make([]string, len(deviceIDs))
	for i, id := range deviceIDs {
		names[i] = FileName(f.resource, id)
	}
	return removeAll(dir, names)
}

func removeAll(dir *securedir.Dir, names []string) error {
	var errs []error
	for _, name := range names {
		if err := dir.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("%w: remove: %w", ErrFile, err))
		}
	}
	return errors.Join(errs...)
}

// Prune removes the files of the resource's devices that keep does not
// keep, and the temporary files a write a crash cut short left of any
// of them; devices is the resource's every device, so that no other
// resource's file (whose name may begin as this one's) is touched. It
// returns the paths it removed.
func (f *Files) Prune(devices []string, keep func(deviceID string) bool) ([]string, error) {
	if !f.Enabled() {
		return nil, nil
	}
	dir, err := f.open()
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	entries, err := dir.Entries()
	if err != nil {
		return nil, fmt.Errorf("%w: list %s: %w", ErrFile, f.dir, err)
	}
	known := make(map[string]bool, len(devices))
	for _, id := range devices {
		known[id] = true
	}
	var removed []string
	var errs []error
	for _, entry := range entries {
		id, temp := f.deviceOf(entry.Name())
		if !entry.Type().IsRegular() || !known[id] || (!temp && keep(id)) {
			continue
		}
		if err := dir.Remove(entry.Name()); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("%w: remove: %w", ErrFile, err))
			continue
		}
		removed = append(removed, dir.Join(entry.Name()))
	}
	return removed, errors.Join(errs...)
}

// deviceOf returns the device ID a file of this resource is named for,
// and whether it is a write's temporary file; "" for any other name.
func (f *Files) deviceOf(name string) (id string, temp bool) {
	if rest, ok := strings.CutPrefix(name, "."); ok {
		if i := strings.LastIndex(rest, ".tmp-"); i > 0 {
			name, temp = rest[:i], true
		}
	}
	id, ours := strings.CutPrefix(name, strings.ReplaceAll(f.resource, "/", "-")+"-")
	id, named := strings.CutSuffix(id, fileSuffix)
	if !ours || !named || id == "" {
		return "", false
	}
	return id, temp
}

// open opens the directory, making it (0755, its parents too) when
// missing, and refuses one another user or a group could change.
func (f *Files) open() (*securedir.Dir, error) {
	dir, err := securedir.Open(f.dir, securedir.Options{Create: true, Mode: os.FileMode(dirMode), Group: securedir.NoGroup})
	if err != nil {
		return nil, fmt.Errorf("%w: open the device-info directory %s (device-info-dir in devicemanager.conf; empty turns the files off): %w", ErrFile, f.dir, err)
	}
	return dir, nil
}
