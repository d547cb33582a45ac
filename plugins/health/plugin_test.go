package health

import (
	"errors"
	"sync"
	"testing"

	"github.com/ligato/cn-infra/health/statuscheck"
	"github.com/ligato/cn-infra/health/statuscheck/model/status"
	"github.com/ligato/cn-infra/infra"
)

type report struct {
	plugin infra.PluginName
	state  statuscheck.PluginState
	err    error
}

func TestAgentStateIsTheWorstPluginState(t *testing.T) {
	cases := []struct {
		name    string
		reports []report
		want    status.OperationalState
	}{
		{"no plugins", nil, status.OperationalState_OK},
		{"one starting", []report{{"controller", statuscheck.Init, nil}}, status.OperationalState_INIT},
		{"all ok", []report{{"controller", statuscheck.OK, nil}, {"devicemanager", statuscheck.OK, nil}}, status.OperationalState_OK},
		{"error then another ok", []report{{"controller", statuscheck.Error, errors.New("resync failed")}, {"devicemanager", statuscheck.OK, nil}}, status.OperationalState_ERROR},
		{"error healed", []report{{"controller", statuscheck.Error, errors.New("resync failed")}, {"controller", statuscheck.OK, nil}}, status.OperationalState_OK},
		{"starting beside ok", []report{{"controller", statuscheck.OK, nil}, {"devicemanager", statuscheck.Init, nil}}, status.OperationalState_INIT},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			health := NewPlugin()
			for _, r := range tc.reports {
				health.ReportStateChange(r.plugin, r.state, r.err)
			}
			if got := health.GetAgentStatus().State; got != tc.want {
				t.Errorf("agent state = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRegisteredPluginStartsInInitAndProbesAreAsked(t *testing.T) {
	health := NewPlugin()
	health.Register("controller", nil)
	if got := health.GetAgentStatus().State; got != status.OperationalState_INIT {
		t.Fatalf("agent state after Register = %v, want INIT", got)
	}
	health.Register("probed", func() (statuscheck.PluginState, error) { return statuscheck.Error, errors.New("disk full") })
	health.ReportStateChange("controller", statuscheck.OK, nil)
	got := health.GetAllPluginStatus()["probed"]
	if got.State != status.OperationalState_ERROR || got.Error != "disk full" {
		t.Errorf("probed plugin status = %v %q, want ERROR %q", got.State, got.Error, "disk full")
	}
}

func TestReadersGetCopies(t *testing.T) {
	health := NewPlugin()
	health.ReportStateChange("controller", statuscheck.OK, nil)
	health.GetAllPluginStatus()["controller"].State = status.OperationalState_ERROR
	health.GetAgentStatus().Plugins[0].Error = "changed by a reader"
	got := health.GetAllPluginStatus()["controller"]
	if got.State != status.OperationalState_OK || got.Error != "" {
		t.Errorf("a reader changed the stored status: %v %q", got.State, got.Error)
	}
}

// TestConcurrentReportsAndReads is for the race detector: the probe plugin
// encodes what it reads while the controller reports.
func TestConcurrentReportsAndReads(t *testing.T) {
	health := NewPlugin()
	states := []statuscheck.PluginState{statuscheck.OK, statuscheck.Error}
	var wg sync.WaitGroup
	for worker := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				if worker%2 == 0 {
					health.ReportStateChange("controller", states[i%2], nil)
					continue
				}
				for _, pluginStatus := range health.GetAllPluginStatus() {
					_ = pluginStatus.State
				}
				_ = health.GetAgentStatus().State
			}
		}()
	}
	wg.Wait()
}
