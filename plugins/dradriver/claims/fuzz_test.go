package claims_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"tags.cncf.io/container-device-interface/pkg/cdi"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/dradriver/claims"
)

// uidPattern is the form of the UIDs the API server gives objects.
var uidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// FuzzCDISpec: for any claim UID and request name the API server can hand
// out and any secret and directory, the CDI library accepts the spec and a
// container gets exactly that secret and directory.
func FuzzCDISpec(f *testing.F) {
	f.Add("6f1c2a4e-1b2c-4d5e-8f90-0123456789ab", "memif", "c2VjcmV0LXNlY3JldC0xMjM0", "/var/run/contiv/memif/memif-dra-000-0a1b2c3d")
	f.Add("00000000-0000-0000-0000-000000000000", "a", "x y=z", "/d")
	cache, err := cdi.NewCache(cdi.WithSpecDirs(f.TempDir()), cdi.WithAutoRefresh(false))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, uid, request, secret, hostDir string) {
		if !uidPattern.MatchString(uid) || len(validation.IsDNS1123Label(request)) > 0 ||
			!strings.HasPrefix(hostDir, "/") || !handedOut(hostDir) || !handedOut(secret) {
			// Secrets are base64url; the socket root comes from a YAML
			// config, UTF-8, and the CDI reader (YAML too) refuses control
			// characters in any spec.
			t.Skip("not what the API server and the device manager hand out")
		}
		spec := claims.CDISpec(uid, []dmapi.PreparedRequest{{Request: request, Memif: dmapi.MemifInfo{
			HostDir: hostDir, ContainerSocket: "/run/vpp/memif.sock", Secret: secret,
		}}}, "/run/vpp")
		if err := cache.WriteSpec(spec, claims.CDISpecName(uid)); err != nil {
			t.Fatalf("CDI refuses the spec of claim %s request %q: %v", uid, request, err)
		}
		if err := cache.Refresh(); err != nil {
			t.Fatal(err)
		}
		oci := ociSpec()
		if _, err := cache.InjectDevices(oci, claims.CDIDeviceID(uid, request)); err != nil {
			t.Fatalf("inject: %v", err)
		}
		if !slices.Contains(oci.Process.Env, dmapi.EnvMemifSecret+"="+secret) || len(oci.Mounts) != 1 || oci.Mounts[0].Source != hostDir {
			t.Errorf("container got env %q mounts %+v; want the secret and %s", oci.Process.Env, oci.Mounts, hostDir)
		}
		if err := cache.RemoveSpec(claims.CDISpecName(uid)); err != nil {
			t.Fatal(err)
		}
	})
}

// handedOut says whether text can be a socket root or a secret: each is
// checked alone, since two invalid UTF-8 halves can join into a valid whole.
func handedOut(text string) bool {
	return utf8.ValidString(text) && !strings.ContainsAny(text, "\x00,") && !strings.ContainsFunc(text, unicode.IsControl)
}

// FuzzRequests: whatever the allocation results, Requests never panics,
// returns only this driver's devices of this node's pool, each once, under
// a request name without a subrequest.
func FuzzRequests(f *testing.F) {
	f.Add("net", "memif.contivpp.io", "node-1", "memif-dra-000", "ctl/fast", "memif-dra-001")
	f.Add("a/b/c", "other", "node-2", "", "", "memif-dra-001")
	f.Fuzz(func(t *testing.T, request1, driver1, pool1, device1, request2, device2 string) {
		results := []resourceapi.DeviceRequestAllocationResult{
			{Request: request1, Driver: driver1, Pool: pool1, Device: device1},
			{Request: request2, Driver: driver, Pool: node, Device: device2},
		}
		got, err := claims.Requests(allocatedClaim(results), driver, node)
		if err != nil {
			if driver1 != driver || pool1 == node {
				t.Fatalf("Requests refused %v: %v", results, err)
			}
			return
		}
		var devices []string
		for _, r := range got {
			if strings.Contains(r.Name, "/") {
				t.Errorf("request name %q holds a subrequest", r.Name)
			}
			devices = append(devices, r.DeviceIDs...)
		}
		var want []string
		for _, r := range results {
			if r.Driver == driver {
				want = append(want, r.Device)
			}
		}
		slices.Sort(devices)
		slices.Sort(want)
		if !slices.Equal(devices, want) {
			t.Errorf("Requests returned devices %q, want %q", devices, want)
		}
	})
}
