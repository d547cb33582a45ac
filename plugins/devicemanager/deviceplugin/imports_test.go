package deviceplugin_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestServerIsAnAdapterOverAllocator: the server reaches the device
// manager only through the Allocator. Neither the controller (its event
// loop, its events' API) nor the device manager's packages are among its
// dependencies, direct or not.
func TestServerIsAnAdapterOverAllocator(t *testing.T) {
	const module = "github.com/contivpp/memif-agent/"
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 2 {
		t.Fatalf("go list -deps listed %v, want the package and its dependencies", deps)
	}
	for _, path := range deps {
		for _, forbidden := range []string{"plugins/controller", "plugins/devicemanager/manager", "plugins/devicemanager/api"} {
			if prefix := module + forbidden; path == prefix || strings.HasPrefix(path, prefix+"/") {
				t.Errorf("deviceplugin depends on %s, want it to reach the device manager only through its Allocator", path)
			}
		}
	}
}
