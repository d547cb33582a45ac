package api_test

import (
	"testing"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

// TestAdmissionEvents: the events kubelet's Allocate and NodePrepareResources
// become take the event loop's admission room; the others wait in the
// background room.
func TestAdmissionEvents(t *testing.T) {
	tests := []struct {
		event controllerapi.Event
		want  bool
	}{
		{dmapi.NewAllocateDevice(dmapi.DefaultResourceName, []string{"memif-001"}), true},
		{dmapi.NewPrepareClaim("uid", "default", "claim", podapi.Pod{}, nil), true},
		{dmapi.NewUnprepareClaim("uid", "default", "claim"), false},
		{&podapi.AddPod{}, false},
		{&podapi.DeletePod{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.event.Spec().Name, func(t *testing.T) {
			if got := tc.event.Spec().Admission; got != tc.want {
				t.Errorf("%s is an admission event: %v, want %v", tc.event.Spec().Name, got, tc.want)
			}
		})
	}
}
