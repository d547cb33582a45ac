package eventlog

import (
	"testing"
	"time"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

func TestWaitForSeesEventsAddedLater(t *testing.T) {
	log := New()
	isDelete := func(event controllerapi.Event) bool { _, ok := event.(*podapi.DeletePod); return ok }
	log.Add(&podapi.AddPod{Pod: podapi.Pod{UID: "a"}})
	go func() {
		time.Sleep(10 * time.Millisecond)
		log.Add(&podapi.DeletePod{Pod: podapi.Pod{UID: "a"}})
	}()
	got := log.WaitFor(t, time.Minute, "DeletePod", isDelete)
	if got.(*podapi.DeletePod).Pod.UID != "a" {
		t.Errorf("WaitFor returned %v, want the DeletePod of uid a", got)
	}
	if n := log.Count(isDelete); n != 1 {
		t.Errorf("Count = %d, want 1", n)
	}
}
