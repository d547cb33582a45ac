package deviceplugin_test

import (
	"testing"
	"time"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/contivpp/memif-agent/plugins/devicemanager/devicehealth"
	vswitchapi "github.com/contivpp/memif-agent/plugins/vswitch/api"
	"github.com/contivpp/memif-agent/test/kit/testlog"
)

// TestListAndWatchFollowsVswitchHealth: kubelet's stream gets every
// device Unhealthy once the vswitch has been unreachable longer than the
// grace, and Healthy again once it answers; a grace not yet over sends
// nothing.
func TestListAndWatchFollowsVswitchHealth(t *testing.T) {
	steps := []struct {
		name        string
		reach       vswitchapi.Reachability
		wantHealth  string
		wantNewList bool
	}{
		{name: "vswitch answers", reach: vswitchapi.Reachability{Configured: true, Reachable: true, Since: time.Now()},
			wantHealth: pluginapi.Healthy},
		{name: "unreachable for longer than the grace",
			reach:      vswitchapi.Reachability{Configured: true, Since: time.Now().Add(-time.Hour)},
			wantHealth: pluginapi.Unhealthy, wantNewList: true},
		{name: "answers again", reach: vswitchapi.Reachability{Configured: true, Reachable: true, Since: time.Now()},
			wantHealth: pluginapi.Healthy, wantNewList: true},
		{name: "no vswitch configured", reach: vswitchapi.Reachability{}, wantHealth: pluginapi.Healthy},
	}
	dir := t.TempDir()
	var vswitch vswitchapi.ReachabilityCell
	vswitch.Set(steps[0].reach)
	watcher := devicehealth.New(&vswitch, time.Minute, testlog.New(t))
	go watcher.Run(t.Context())
	registry := startRegistry(t, dir)
	cfg := testConfig(dir)
	cfg.Health = func() (bool, <-chan struct{}) {
		health, changed := watcher.DeviceHealth()
		return health.Healthy, changed
	}
	startServerWith(t, cfg, &fakeAllocator{}, nil)
	r := nextRegistration(t, registry)
	devices, _ := nextDevices(t, r)
	for _, step := range steps {
		vswitch.Set(step.reach)
		if step.wantNewList {
			devices, _ = nextDevices(t, r)
		}
		for _, device := range devices {
			if device.Health != step.wantHealth {
				t.Errorf("%s: device %s is %s, want %s", step.name, device.ID, device.Health, step.wantHealth)
			}
		}
		if len(devices) != len(cfg.Devices) {
			t.Errorf("%s: %d devices, want %d", step.name, len(devices), len(cfg.Devices))
		}
	}
	select {
	case extra := <-r.Devices:
		t.Errorf("ListAndWatch sent %v although the health did not change", extra)
	default:
	}
}
