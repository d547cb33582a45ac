package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contivpp/memif-agent/internal/configfile"
	"github.com/contivpp/memif-agent/internal/unixgroup"
)

func TestParseDefaults(t *testing.T) {
	for _, content := range []string{"", "# only a comment\n", "{}"} {
		cfg, err := Parse([]byte(content))
		if err != nil {
			t.Fatalf("Parse(%q): %v", content, err)
		}
		if cfg != Default() {
			t.Errorf("Parse(%q) = %+v, want the defaults %+v", content, cfg, Default())
		}
	}
}

func TestParseEveryKey(t *testing.T) {
	content := `
device-plugin: false
resource-name: example.com/memif
device-count: 8
claim-device-count: 16
plugin-dir: /tmp/dp
plugin-socket: other.sock
kubelet-socket: k.sock
socket-root: /tmp/memif
container-dir: /memif
socket-name: s.sock
checkpoint-path: /tmp/state/cp.json
dir-mode: "0750"
dir-group: "1234"
unbound-grace-period: 90s
vswitch-health-grace: 3s
device-info-dir: /tmp/devinfo
`
	cfg, err := Parse([]byte(content))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := Config{
		ResourceName: "example.com/memif", DeviceCount: 8, ClaimDeviceCount: 16, PluginDir: "/tmp/dp",
		PluginSocket: "other.sock", KubeletSocket: "k.sock", SocketRoot: "/tmp/memif",
		ContainerDir: "/memif", SocketName: "s.sock", CheckpointPath: "/tmp/state/cp.json",
		DirMode: 0o750, DirGroup: "1234", UnboundGracePeriod: configfile.Duration(90 * time.Second),
		VswitchHealthGrace: configfile.Duration(3 * time.Second), DeviceInfoDir: "/tmp/devinfo",
	}
	if cfg != want {
		t.Errorf("Parse = %+v, want %+v", cfg, want)
	}
	if got := cfg.ContainerSocket(); got != "/memif/s.sock" {
		t.Errorf("ContainerSocket = %q", got)
	}
	if got := cfg.KubeletSocketPath(); got != "/tmp/dp/k.sock" {
		t.Errorf("KubeletSocketPath = %q", got)
	}
}

func TestParseDeviceInfoDir(t *testing.T) {
	for _, tc := range []struct{ content, want string }{
		{"", DefaultDeviceInfoDir},
		{`device-info-dir: ""`, ""},
		{"device-info-dir: /run/devinfo/dp/", "/run/devinfo/dp/"},
	} {
		cfg, err := Parse([]byte(tc.content))
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.content, err)
		}
		if cfg.DeviceInfoDir != tc.want {
			t.Errorf("Parse(%q): device-info-dir %q, want %q", tc.content, cfg.DeviceInfoDir, tc.want)
		}
	}
}

// TestExampleConfigFile keeps devicemanager.conf parseable and equal to the
// defaults it documents.
func TestExampleConfigFile(t *testing.T) {
	content, err := os.ReadFile(filepath.Join("..", "devicemanager.conf"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse(content)
	if err != nil {
		t.Fatalf("devicemanager.conf: %v", err)
	}
	if cfg != Default() {
		t.Errorf("devicemanager.conf = %+v, want the defaults %+v", cfg, Default())
	}
}

func TestParseRejects(t *testing.T) {
	cases := []struct {
		name    string
		content string
		wantKey string
		wantMsg string
	}{
		{"resource without domain", "resource-name: memif", "resource-name", "must be DOMAIN/NAME"},
		{"resource in kubernetes.io", "resource-name: kubernetes.io/memif", "resource-name", "reserved"},
		{"resource upper case", "resource-name: Example.com/Memif", "resource-name", "lower-case"},
		{"zero devices", "device-count: 0", "device-count", "must be 1..65536, got 0"},
		{"too many devices", "device-count: 65537", "device-count", "got 65537"},
		{"relative plugin dir", "plugin-dir: dp", "plugin-dir", "absolute path"},
		{"plugin socket with slash", "plugin-socket: a/b.sock", "plugin-socket", "plain file name"},
		{"plugin socket is kubelet's", "plugin-socket: kubelet.sock", "plugin-socket", "must differ"},
		{"empty kubelet socket", `kubelet-socket: ""`, "kubelet-socket", "plain file name"},
		{"socket root is /", "socket-root: /", "socket-root", "root directory"},
		{"relative container dir", "container-dir: run/vpp", "container-dir", "absolute path"},
		{"NUL byte in socket root", "socket-root: \"/run/m\\0x\"", "socket-root", "NUL byte"},
		{"socket name dot-dot", "socket-name: ..", "socket-name", "plain file name"},
		{"checkpoint under socket root", "checkpoint-path: /var/run/contiv/memif/cp.json", "checkpoint-path", "must not be under socket-root"},
		{"relative checkpoint", "checkpoint-path: cp.json", "checkpoint-path", "absolute path"},
		{"checkpoint with a trailing slash", "checkpoint-path: /var/lib/memif-agent/", "checkpoint-path", "no trailing '/'"},
		{"checkpoint an existing directory", "checkpoint-path: /usr", "checkpoint-path", "which is a directory"},
		{"checkpoint a symbolic link", "checkpoint-path: /proc/self", "checkpoint-path", "which is a symbolic link"},
		{"kubelet's own checkpoint", "checkpoint-path: /var/lib/kubelet/device-plugins/kubelet_internal_checkpoint", "checkpoint-path", "must not be under plugin-dir"},
		{"checkpoint in kubelet's directory", "checkpoint-path: /var/lib/kubelet/memif.json", "checkpoint-path", "must not be under kubelet's directory"},
		{"dir mode world writable", `dir-mode: "0777"`, "dir-mode", "writable by others"},
		{"dir mode without owner x", `dir-mode: "0670"`, "dir-mode", "owner rwx"},
		{"dir mode setuid", `dir-mode: "4770"`, "dir-mode", "within 0777"},
		{"dir mode not octal", `dir-mode: "0790"`, "dir-mode", "octal"},
		{"dir mode bare number", `dir-mode: 0770`, "dir-mode", "quoted octal"},
		{"dir group with colon", `dir-group: "a:b"`, "dir-group", "group name"},
		{"negative dir group", `dir-group: "-1"`, "dir-group", "non-negative"},
		{"fractional dir group", "dir-group: 1.5", "dir-group", "group name or a numeric ID"},
		{"grace period zero", `unbound-grace-period: 0s`, "unbound-grace-period", "positive"},
		{"grace period garbage", `unbound-grace-period: soon`, "unbound-grace-period", `want a duration such as "30s", got "soon"`},
		{"grace period a number", `unbound-grace-period: 600`, "unbound-grace-period", `want a duration such as "30s", got 600`},
		{"reconcile period, moved to podmanager.conf", `reconcile-period: 1m`, "reconcile-period", "moved to podmanager.conf"},
		{"vswitch health grace zero", `vswitch-health-grace: 0s`, "vswitch-health-grace", "positive"},
		{"vswitch health grace garbage", `vswitch-health-grace: ten`, "vswitch-health-grace", `want a duration such as "30s", got "ten"`},
		{"device count a word", `device-count: many`, "device-count", `want a whole number, got a string`},
		{"socket root a number", "socket-root: 5", "socket-root", "want a string, got a number"},
		{"relative device-info dir", "device-info-dir: devinfo", "device-info-dir", "(or empty to write no device-info file"},
		{"device-info dir the root", "device-info-dir: /", "device-info-dir", "root directory"},
		{"device-info dir in the socket root", "device-info-dir: /var/run/contiv/memif/devinfo", "device-info-dir", `must be apart from socket-root "/var/run/contiv/memif"`},
		{"device-info dir above the plugin dir", "device-info-dir: /var/lib/kubelet", "device-info-dir", "must be apart from plugin-dir"},
		{"misspelt key", `device-cuont: 3`, "device-cuont", "unknown key; the keys are"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.content))
			var keyErr *configfile.KeyError
			if !errors.As(err, &keyErr) {
				t.Fatalf("Parse(%q) error = %v, want a *configfile.KeyError", tc.content, err)
			}
			if keyErr.Key != tc.wantKey || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("Parse(%q) error = %q, want key %q and %q", tc.content, err, tc.wantKey, tc.wantMsg)
			}
			if !strings.Contains(err.Error(), `config key "`+tc.wantKey+`"`) {
				t.Errorf("error %q does not name the key %q", err, tc.wantKey)
			}
		})
	}
}

// An old devicemanager.conf that still sets reconcile-period stops the
// agent with the file, the key and where the key went.
func TestMovedReconcilePeriodNamesFileKeyAndNewHome(t *testing.T) {
	path := filepath.Join(t.TempDir(), "devicemanager.conf")
	if err := os.WriteFile(path, []byte("device-count: 8\nreconcile-period: 1m\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := Default()
	err := configfile.Load(path, &cfg)
	for _, want := range []string{path, `"reconcile-period"`, "moved to podmanager.conf"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Load of an old devicemanager.conf = %v, want an error naming %s", err, want)
		}
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	cfg := Default()
	cfg.DeviceCount = 0
	cfg.SocketName = ""
	err := cfg.Validate()
	for _, key := range []string{"device-count", "socket-name"} {
		if err == nil || !strings.Contains(err.Error(), `"`+key+`"`) {
			t.Errorf("Validate error = %v, want it to name %q", err, key)
		}
	}
}

func TestResolveGroup(t *testing.T) {
	cases := []struct {
		name    string
		group   string
		wantGID int
		wantErr bool
	}{
		{"no group", "", -1, false},
		{"numeric", "4321", 4321, false},
		{"root by name", "root", 0, false},
		{"unknown name", "no-such-group-memif", 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Default()
			cfg.DirGroup = unixgroup.Group(tc.group)
			gid, err := cfg.ResolveGroup()
			if (err != nil) != tc.wantErr {
				t.Fatalf("ResolveGroup(%q) error = %v, want error %v", tc.group, err, tc.wantErr)
			}
			if err == nil && gid != tc.wantGID {
				t.Errorf("ResolveGroup(%q) = %d, want %d", tc.group, gid, tc.wantGID)
			}
			if err != nil && !strings.Contains(err.Error(), `"dir-group"`) {
				t.Errorf("error %q does not name the key", err)
			}
		})
	}
}

// TestCheckpointPathResolvesLinks lays out a kubelet-like tree and a
// socket root in a temp dir, and spells checkpoint paths into them through
// symbolic links (as /var/lib/kubelet is often a link to a data disk):
// each is refused naming the path, what it resolves to and what to write
// instead. A link to a directory of the agent's own is fine.
func TestCheckpointPathResolvesLinks(t *testing.T) {
	root := t.TempDir()
	kubelet := filepath.Join(root, "kubelet")
	pluginDir := filepath.Join(kubelet, "device-plugins")
	socketRoot := filepath.Join(root, "memif")
	for _, dir := range []string{pluginDir, socketRoot, filepath.Join(root, "own"), filepath.Join(root, "x")} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"x/kl":       kubelet,
		"x/rel":      "../kubelet",
		"x/chain":    filepath.Join(root, "x", "kl"),
		"x/sr":       socketRoot,
		"x/dangling": filepath.Join(pluginDir, "not-yet"),
		"x/vlk":      "/var/lib/kubelet",
		"x/dotdot":   filepath.Join(root, "own"),
		"x/own":      filepath.Join(root, "own"),
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name       string
		checkpoint string
		resolved   string // "" when it is accepted
		under      string
	}{
		{"link to kubelet's tree, its checkpoint", "x/kl/device-plugins/kubelet_internal_checkpoint", "kubelet/device-plugins/kubelet_internal_checkpoint", "plugin-dir"},
		{"link to /var/lib/kubelet", "x/vlk/memif.json", "/var/lib/kubelet/memif.json", "kubelet's directory"},
		{"relative link", "x/rel/device-plugins/cp.json", "kubelet/device-plugins/cp.json", "plugin-dir"},
		{"chain of links", "x/chain/device-plugins/cp.json", "kubelet/device-plugins/cp.json", "plugin-dir"},
		{"link to the socket root", "x/sr/cp.json", "memif/cp.json", "socket-root"},
		{"dangling link into kubelet's tree", "x/dangling/cp.json", "kubelet/device-plugins/not-yet/cp.json", "plugin-dir"},
		{"dot-dot after a link", "x/dotdot/../kubelet/device-plugins/cp.json", "kubelet/device-plugins/cp.json", "plugin-dir"},
		{"link to a directory of its own", "x/own/cp.json", "", ""},
		{"directory still to be made", "x/own/state/cp.json", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Default()
			cfg.PluginDir, cfg.SocketRoot = pluginDir, socketRoot
			cfg.CheckpointPath = root + "/" + tc.checkpoint // unclean: ".." after a link
			err := cfg.Validate()
			if tc.resolved == "" {
				if err != nil {
					t.Fatalf("Validate with checkpoint-path %s = %v, want nil", cfg.CheckpointPath, err)
				}
				return
			}
			var keyErr *configfile.KeyError
			if !errors.As(err, &keyErr) || keyErr.Key != "checkpoint-path" {
				t.Fatalf("Validate with checkpoint-path %s = %v, want a checkpoint-path error", cfg.CheckpointPath, err)
			}
			for _, want := range []string{
				fmt.Sprintf("%q resolves to %q", cfg.CheckpointPath, resolvedIn(root, tc.resolved)),
				"under " + tc.under,
				"such as " + fmt.Sprintf("%q", DefaultCheckpointPath),
			} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Validate error %q does not say %q", err, want)
				}
			}
		})
	}
}

// resolvedIn is path in root, unless it is absolute.
func resolvedIn(root, path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(root, path)
}
