package devicehealth_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/contivpp/memif-agent/plugins/devicemanager/devicehealth"
	vswitchapi "github.com/contivpp/memif-agent/plugins/vswitch/api"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/testlog"
)

var errStopped = errors.New("VPP did not answer control_ping")

// TestHealthFollowsReachability: the devices turn unhealthy only once the
// vswitch has been unreachable for the grace, and healthy at once when it
// answers.
func TestHealthFollowsReachability(t *testing.T) {
	const grace = time.Second
	tests := []struct {
		name        string
		reach       func() vswitchapi.Reachability
		wantHealthy bool
		// wantFirst: the health seen at once, before the grace may end.
		wantFirst bool
	}{
		{name: "no vswitch", reach: func() vswitchapi.Reachability { return vswitchapi.Reachability{} },
			wantFirst: true, wantHealthy: true},
		{name: "answers", reach: func() vswitchapi.Reachability {
			return vswitchapi.Reachability{Configured: true, Reachable: true, Since: time.Now()}
		}, wantFirst: true, wantHealthy: true},
		{name: "unreachable since long ago", reach: func() vswitchapi.Reachability {
			return vswitchapi.Reachability{Configured: true, Since: time.Now().Add(-time.Hour), Err: errStopped}
		}, wantFirst: false, wantHealthy: false},
		{name: "unreachable just now: healthy until the grace ends", reach: func() vswitchapi.Reachability {
			return vswitchapi.Reachability{Configured: true, Since: time.Now(), Err: errStopped}
		}, wantFirst: true, wantHealthy: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var vswitch vswitchapi.ReachabilityCell
			vswitch.Set(vswitchapi.Reachability{Configured: true, Reachable: true, Since: time.Now()})
			watcher := devicehealth.New(&vswitch, grace, testlog.New(t))
			ctx, stop := context.WithCancel(context.Background())
			stopped := make(chan struct{})
			go func() {
				defer close(stopped)
				watcher.Run(ctx)
			}()
			// The watcher logs each change: it must be done before the
			// test is.
			t.Cleanup(func() { stop(); <-stopped })
			reach := tc.reach()
			vswitch.Set(reach)
			if tc.wantFirst {
				if health, _ := watcher.DeviceHealth(); !health.Healthy {
					t.Fatalf("devices unhealthy at once (%s), want healthy", health.Reason)
				}
			}
			poll.Until(t, 10*time.Second, fmt.Sprintf("devices healthy=%v", tc.wantHealthy), func() error {
				if health, _ := watcher.DeviceHealth(); health.Healthy != tc.wantHealthy {
					return fmt.Errorf("healthy=%v (%s)", health.Healthy, health.Reason)
				}
				return nil
			})
			health, changed := watcher.DeviceHealth()
			if !tc.wantHealthy && (!strings.Contains(health.Reason, errStopped.Error()) || !strings.Contains(health.Reason, "vswitch-health-grace")) {
				t.Errorf("reason = %q, want the vswitch's error and the grace named", health.Reason)
			}
			if tc.wantHealthy {
				return
			}
			vswitch.Set(vswitchapi.Reachability{Configured: true, Reachable: true, Since: time.Now()})
			<-changed
			if health, _ := watcher.DeviceHealth(); !health.Healthy {
				t.Errorf("devices unhealthy after the vswitch answered again: %s", health.Reason)
			}
		})
	}
}
