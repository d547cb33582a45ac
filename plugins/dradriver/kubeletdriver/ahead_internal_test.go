package kubeletdriver

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakeapiserver "k8s.io/client-go/kubernetes/fake"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/dradriver/claims"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kit/testlog"
)

// heldClaims is a stand-in ClaimPreparer (the interleaving below cannot
// be forced on the real device manager) that holds every claim, answers
// PreparedClaims only once proceed is closed, and counts Unprepare calls.
type heldClaims struct {
	dmapi.ClaimPreparer
	uid        string
	listing    chan struct{}
	proceed    chan struct{}
	unprepared atomic.Int32
}

func (c *heldClaims) PreparedClaims(context.Context) ([]dmapi.ClaimRef, error) {
	close(c.listing)
	<-c.proceed
	return []dmapi.ClaimRef{{UID: c.uid}}, nil
}

func (c *heldClaims) Unprepare(context.Context, dmapi.ClaimRef) error {
	c.unprepared.Add(1)
	return nil
}

// TestPodEndedLeavesAClaimFoundHeld: a pod that ends while the driver is
// finding out whether the device manager holds its claim already takes
// the claim's entry; the claim, found held (kubelet's), is not released.
func TestPodEndedLeavesAClaimFoundHeld(t *testing.T) {
	held := &heldClaims{uid: "claim-uid", listing: make(chan struct{}), proceed: make(chan struct{})}
	dir := t.TempDir()
	d, err := New(Config{DriverName: claims.DefaultDriverName, NodeName: "node-1", CDIDir: filepath.Join(dir, "cdi"), Claims: held},
		fakeapiserver.NewClientset(), testlog.New(t))
	if err != nil {
		t.Fatal(err)
	}
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "memif", UID: "claim-uid"},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
			Results: []resourceapi.DeviceRequestAllocationResult{{Request: "memif", Driver: claims.DefaultDriverName, Pool: "node-1", Device: "memif-dra-000"}}}}}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "dpdk", UID: "pod-uid"}}

	ctx := t.Context()
	read := make(chan struct{})
	go func() { defer close(read); d.ClaimRead(ctx, pod.UID, claim) }()
	<-held.listing
	ended := make(chan struct{})
	go func() { defer close(ended); d.PodEnded(ctx, pod) }()
	poll.Until(t, 10*time.Second, "the pod's end took the claim's entry", func() error {
		d.ahead.mu.Lock()
		defer d.ahead.mu.Unlock()
		if len(d.ahead.byUID) != 0 {
			return errors.New("not yet")
		}
		return nil
	})
	close(held.proceed)
	<-read
	<-ended
	if n := held.unprepared.Load(); n != 0 {
		t.Errorf("the driver unprepared a claim it found held %d times, want 0", n)
	}
}
