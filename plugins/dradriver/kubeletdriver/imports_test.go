package kubeletdriver_test

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/contivpp/memif-agent/"

// TestDriverIsAnAdapterOverClaimPreparer: the driver reaches the device
// manager only through dmapi.ClaimPreparer. It imports no package of the
// controller, and neither the device manager's internals nor the event
// loop are among its dependencies; the controller's api package is, only
// because dmapi's events carry its Result.
func TestDriverIsAnAdapterOverClaimPreparer(t *testing.T) {
	direct := goList(t, "{{join .Imports \" \"}}")
	all := goList(t, "{{.ImportPath}}", "-deps")
	for _, check := range []struct {
		name      string
		imports   []string
		forbidden []string
	}{
		{"imports", direct, []string{
			module + "plugins/controller",
			module + "plugins/devicemanager/manager",
			module + "plugins/devicemanager/deviceplugin",
		}},
		{"dependencies", all, []string{
			module + "plugins/controller/eventloop",
			module + "plugins/devicemanager/manager",
			module + "plugins/devicemanager/allocation",
			module + "plugins/devicemanager/checkpoint",
		}},
	} {
		t.Run(check.name, func(t *testing.T) {
			for _, path := range check.imports {
				for _, prefix := range check.forbidden {
					if path == prefix || strings.HasPrefix(path, prefix+"/") {
						t.Errorf("kubeletdriver has %s among its %s, want it to reach the device manager only through dmapi.ClaimPreparer", path, check.name)
					}
				}
			}
		})
	}
}

// goList lists the package in the test's directory as format prints it,
// split into words.
func goList(t *testing.T, format string, flags ...string) []string {
	t.Helper()
	args := append(append([]string{"list"}, flags...), "-f", format, ".")
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		t.Fatalf("go %v: %v", args, err)
	}
	return strings.Fields(string(out))
}
