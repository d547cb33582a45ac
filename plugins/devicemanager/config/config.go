package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/contivpp/memif-agent/internal/configfile"
	"github.com/contivpp/memif-agent/internal/unixgroup"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/devicemanager/deviceinfo"
)

// Defaults of every key.
const (
	DefaultDeviceCount        = 256
	DefaultPluginDir          = "/var/lib/kubelet/device-plugins"
	DefaultPluginSocket       = "memif.sock"
	DefaultKubeletSocket      = "kubelet.sock"
	DefaultSocketRoot         = "/var/run/contiv/memif"
	DefaultContainerDir       = "/run/vpp"
	DefaultSocketName         = "memif.sock"
	DefaultCheckpointPath     = "/var/lib/memif-agent/checkpoint.json"
	DefaultDirMode            = configfile.FileMode(0o770)
	DefaultUnboundGracePeriod = configfile.Duration(10 * time.Minute)
	DefaultVswitchHealthGrace = configfile.Duration(10 * time.Second)
	DefaultDeviceInfoDir      = deviceinfo.DefaultDir

	// MaxDeviceCount bounds device-count: kubelet keeps every device in
	// memory and in its own checkpoint.
	MaxDeviceCount = 65536
)

// Config is the device manager's configuration. The JSON names are the keys
// of the YAML config file.
type Config struct {
	// DevicePlugin switches kubelet's device plugin (the extended
	// resource) on or off.
	DevicePlugin bool `json:"device-plugin"`
	// ResourceName is the extended resource pods request.
	ResourceName string `json:"resource-name"`
	// DeviceCount is how many memif devices the node advertises.
	DeviceCount int `json:"device-count"`
	// ClaimDeviceCount is how many memif devices the DRA driver publishes
	// in ResourceSlices (a pool apart from DeviceCount's); 0 when it is off.
	ClaimDeviceCount int `json:"claim-device-count"`
	// PluginDir is kubelet's device-plugin directory; our socket and
	// kubelet's registration socket live there.
	PluginDir string `json:"plugin-dir"`
	// PluginSocket is the file name of our gRPC socket in PluginDir.
	PluginSocket string `json:"plugin-socket"`
	// KubeletSocket is the file name of kubelet's registration socket in
	// PluginDir.
	KubeletSocket string `json:"kubelet-socket"`
	// SocketRoot is the host directory holding one directory per allocation.
	SocketRoot string `json:"socket-root"`
	// ContainerDir is where an allocation's directory is mounted in the
	// container.
	ContainerDir string `json:"container-dir"`
	// SocketName is the memif socket's file name in both directories.
	SocketName string `json:"socket-name"`
	// CheckpointPath is the file where allocations are persisted. It is
	// checked as written and as its links resolve, and the agent uses the
	// resolved path.
	CheckpointPath string `json:"checkpoint-path"`
	// DirMode is the permission of each allocation directory, as an octal
	// string ("0770").
	DirMode configfile.FileMode `json:"dir-mode"`
	// DirGroup, when set, is the group (name or numeric ID) that owns each
	// allocation directory, so that a non-root pod process in that group can
	// reach the socket.
	DirGroup unixgroup.Group `json:"dir-group,omitempty"`
	// UnboundGracePeriod is how long an allocation that no pod has been seen
	// holding is kept before a resync collects it ("10m").
	UnboundGracePeriod configfile.Duration `json:"unbound-grace-period"`
	// MovedReconcilePeriod is reconcile-period, which moved to
	// podmanager.conf: the pod manager alone decides when a pod is gone,
	// and the device manager releases on its decisions. Any value is
	// refused, naming where the key went.
	MovedReconcilePeriod movedKey `json:"reconcile-period,omitzero"`
	// VswitchHealthGrace is how long the vswitch may be unreachable (down,
	// or not answering within vswitch.conf's request-timeout) before the
	// devices are reported unhealthy to kubelet and the scheduler ("10s");
	// they are healthy again as soon as it answers.
	VswitchHealthGrace configfile.Duration `json:"vswitch-health-grace"`
	// DeviceInfoDir is where the device-info file of each allocated device
	// of the device plugin goes (the device-info spec's directory, which
	// Multus reads); empty: none is written.
	DeviceInfoDir string `json:"device-info-dir"`
}

// Default returns the configuration with every default applied.
func Default() Config {
	return Config{
		DevicePlugin:       true,
		ResourceName:       dmapi.DefaultResourceName,
		DeviceCount:        DefaultDeviceCount,
		PluginDir:          DefaultPluginDir,
		PluginSocket:       DefaultPluginSocket,
		KubeletSocket:      DefaultKubeletSocket,
		SocketRoot:         DefaultSocketRoot,
		ContainerDir:       DefaultContainerDir,
		SocketName:         DefaultSocketName,
		CheckpointPath:     DefaultCheckpointPath,
		DirMode:            DefaultDirMode,
		UnboundGracePeriod: DefaultUnboundGracePeriod,
		VswitchHealthGrace: DefaultVswitchHealthGrace,
		DeviceInfoDir:      DefaultDeviceInfoDir,
	}
}

// Parse reads a YAML config file's content over the defaults and validates
// the result. Keys not set keep their default; unknown keys are refused so
// that a misspelt key is not silently ignored. Every problem is a
// *configfile.KeyError naming its key.
func Parse(content []byte) (Config, error) {
	cfg := Default()
	if err := configfile.Decode(content, &cfg); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// Validate checks every key and returns all problems found, each a
// *configfile.KeyError.
func (c Config) Validate() error {
	var problems configfile.Problems
	problems.Check("resource-name", checkResourceName(c.ResourceName))
	if c.DeviceCount < 1 || c.DeviceCount > MaxDeviceCount {
		problems.Addf("device-count", "must be 1..%d, got %d", MaxDeviceCount, c.DeviceCount)
	}
	if c.ClaimDeviceCount < 0 || c.ClaimDeviceCount > MaxDeviceCount {
		problems.Addf("claim-device-count", "must be 0..%d, got %d", MaxDeviceCount, c.ClaimDeviceCount)
	}
	problems.Check("plugin-dir", checkAbsDir(c.PluginDir))
	problems.Check("plugin-socket", checkFileName(c.PluginSocket))
	problems.Check("kubelet-socket", checkFileName(c.KubeletSocket))
	if c.PluginSocket == c.KubeletSocket && c.PluginSocket != "" {
		problems.Addf("plugin-socket", "must differ from kubelet-socket, both are %q", c.PluginSocket)
	}
	problems.Check("socket-root", checkAbsDir(c.SocketRoot))
	problems.Check("container-dir", checkAbsDir(c.ContainerDir))
	problems.Check("socket-name", checkFileName(c.SocketName))
	problems.Check("checkpoint-path", checkCheckpointPath(c.CheckpointPath, c.SocketRoot, c.PluginDir))
	problems.Check("dir-mode", checkDirMode(c.DirMode))
	problems.Check("dir-group", c.DirGroup.CheckSyntax())
	problems.CheckPositive("unbound-grace-period", c.UnboundGracePeriod, "10m")
	if c.MovedReconcilePeriod.set {
		problems.Addf("reconcile-period", "moved to podmanager.conf, whose pod tracker alone decides when a pod is gone (the device manager releases allocations on its decisions): remove it from devicemanager.conf and set reconcile-period in podmanager.conf (default 30s)")
	}
	problems.CheckPositive("vswitch-health-grace", c.VswitchHealthGrace, "10s")
	problems.Check("device-info-dir", checkDeviceInfoDir(c.DeviceInfoDir, c.SocketRoot, c.PluginDir))
	return problems.Err()
}

// movedKey is a key that moved to another file: it takes any value, so
// that Validate refuses it saying where it went, rather than the decoder
// as an unknown key.
type movedKey struct{ set bool }

// UnmarshalJSON implements json.Unmarshaler.
func (k *movedKey) UnmarshalJSON([]byte) error {
	k.set = true
	return nil
}

// ResolveGroup returns the numeric group ID of DirGroup, or -1 when no
// group is configured (the directory keeps the agent's group).
func (c Config) ResolveGroup() (int, error) {
	gid, err := c.DirGroup.Lookup()
	if err != nil {
		return 0, &configfile.KeyError{Key: "dir-group", Reason: err.Error()}
	}
	return gid, nil
}

// HostSocket is the host path of the socket in the allocation's directory.
func (c Config) HostSocket(allocationDir string) string {
	return filepath.Join(allocationDir, c.SocketName)
}

// ContainerSocket is the socket path a container sees (MEMIF_SOCKET).
func (c Config) ContainerSocket() string {
	return filepath.Join(c.ContainerDir, c.SocketName)
}

// PluginSocketPath is the full path of our device-plugin socket.
func (c Config) PluginSocketPath() string {
	return filepath.Join(c.PluginDir, c.PluginSocket)
}

// KubeletSocketPath is the full path of kubelet's registration socket.
func (c Config) KubeletSocketPath() string {
	return filepath.Join(c.PluginDir, c.KubeletSocket)
}

func checkResourceName(name string) string {
	// kubelet accepts an extended resource name "domain/name" whose domain
	// is not kubernetes.io.
	domain, resource, found := strings.Cut(name, "/")
	switch {
	case !found || domain == "" || resource == "" || strings.Contains(resource, "/"):
		return fmt.Sprintf("must be DOMAIN/NAME such as %q, got %q", dmapi.DefaultResourceName, name)
	case domain == "kubernetes.io" || strings.HasSuffix(domain, ".kubernetes.io"):
		return fmt.Sprintf("domain %q is reserved by Kubernetes, got %q", domain, name)
	case !isQualifiedPart(domain) || !isQualifiedPart(resource):
		return fmt.Sprintf("may hold only lower-case letters, digits, '-' and '.', got %q", name)
	}
	return ""
}

func isQualifiedPart(part string) bool {
	if len(part) > 63 && !strings.Contains(part, ".") {
		return false
	}
	for i, r := range part {
		alnum := r >= 'a' && r <= 'z' || r >= '0' && r <= '9'
		edge := i == 0 || i == len(part)-1
		if !alnum && (edge || (r != '-' && r != '.' && r != '_')) {
			return false
		}
	}
	return len(part) <= 253
}

func checkAbsDir(path string) string {
	if path == "" || !filepath.IsAbs(path) {
		return fmt.Sprintf("must be an absolute path, got %q", path)
	}
	if strings.ContainsRune(path, 0) {
		return fmt.Sprintf("must not contain a NUL byte, got %q", path)
	}
	if filepath.Clean(path) == "/" {
		return "must not be the root directory"
	}
	return ""
}

// checkDeviceInfoDir: empty (off), or an absolute directory out of the
// socket root, whose entries are the pods' directories, and of kubelet's
// plugin directory.
func checkDeviceInfoDir(dir, socketRoot, pluginDir string) string {
	if dir == "" {
		return ""
	}
	if reason := checkAbsDir(dir); reason != "" {
		return reason + fmt.Sprintf(" (or empty to write no device-info file; the spec's directory is %q)", DefaultDeviceInfoDir)
	}
	for _, other := range []struct{ key, dir string }{{"socket-root", socketRoot}, {"plugin-dir", pluginDir}} {
		if isUnder(dir, other.dir) || isUnder(other.dir, dir) {
			return fmt.Sprintf("must be apart from %s %q, got %q; the spec's directory is %q", other.key, other.dir, dir, DefaultDeviceInfoDir)
		}
	}
	return ""
}

func checkFileName(name string) string {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return fmt.Sprintf("must be a plain file name, got %q", name)
	}
	return ""
}

// kubeletRoot is kubelet's state directory: its checkpoints, the plugin
// sockets and the pod-resources socket live under it.
const kubeletRoot = "/var/lib/kubelet"

// checkCheckpointPath checks the path as written and as it resolves
// (ResolveLinks): "/data/x -> /var/lib/kubelet" makes a path that reads as
// the agent's own one inside kubelet's tree.
func checkCheckpointPath(path, socketRoot, pluginDir string) string {
	if reason := checkAbsDir(path); reason != "" {
		return reason
	}
	if strings.HasSuffix(path, "/") {
		return fmt.Sprintf("must name a file, not a directory (no trailing '/'), got %q", path)
	}
	resolved, err := ResolveLinks(path)
	if err != nil {
		return fmt.Sprintf("must be a path whose links can be followed: %v; name a file in a directory of its own, such as %q", err, DefaultCheckpointPath)
	}
	// Allocation directories under the socket root are mounted into pods;
	// the checkpoint holds every secret and must never be reachable there.
	// kubelet's directories hold its own files, which a save would replace
	// (and a load take for a damaged checkpoint, and move aside).
	for _, other := range forbiddenDirs(socketRoot, pluginDir) {
		for _, dir := range []string{filepath.Clean(other.dir), resolvedOrClean(other.dir)} {
			switch {
			case isUnder(path, dir):
				return fmt.Sprintf("must not be under %s %q, got %q; name a file in a directory of its own, such as %q", other.key, other.dir, path, DefaultCheckpointPath)
			case isUnder(resolved, dir):
				return fmt.Sprintf("must not be under %s %q: %q resolves to %q through a symbolic link; name a file in a directory of its own that no link leads into %s, such as %q", other.key, other.dir, path, resolved, other.key, DefaultCheckpointPath)
			}
		}
	}
	if info, err := os.Lstat(path); err == nil && !info.Mode().IsRegular() {
		return fmt.Sprintf("must name a regular file, got %q, which is a %s; name a file in a directory of its own, such as %q", path, fileKind(info.Mode()), DefaultCheckpointPath)
	}
	return ""
}

// forbiddenDirs are the directories the checkpoint must stay out of.
func forbiddenDirs(socketRoot, pluginDir string) []struct{ key, dir string } {
	return []struct{ key, dir string }{{"socket-root", socketRoot}, {"plugin-dir", pluginDir}, {"kubelet's directory", kubeletRoot}}
}

func resolvedOrClean(dir string) string {
	if resolved, err := ResolveLinks(dir); err == nil {
		return resolved
	}
	return filepath.Clean(dir)
}

// isUnder tells whether path is dir or below it, as written.
func isUnder(path, dir string) bool {
	rel, err := filepath.Rel(dir, filepath.Clean(path))
	return err == nil && filepath.IsLocal(rel)
}

func fileKind(mode os.FileMode) string {
	switch {
	case mode.IsDir():
		return "directory"
	case mode&os.ModeSymlink != 0:
		return "symbolic link"
	}
	return "special file"
}

func checkDirMode(mode configfile.FileMode) string {
	switch {
	case mode&^0o777 != 0:
		return fmt.Sprintf("must be permission bits within 0777, got %#o", uint32(mode))
	case mode&0o700 != 0o700:
		return fmt.Sprintf("must give the owner rwx (0700), got %#o", uint32(mode))
	case mode&0o002 != 0:
		return fmt.Sprintf("must not be writable by others, got %#o; use dir-group to let pod processes in", uint32(mode))
	}
	return ""
}
