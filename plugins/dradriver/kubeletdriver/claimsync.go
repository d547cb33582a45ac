package kubeletdriver

import (
	"context"
	"errors"
	"fmt"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/dradriver/claims"
)

// syncClaims tells the device manager which of its prepared claims the API
// server still has and which pod each is reserved for (Claims.Sync): a claim
// deleted, or released by its pods, while the agent was down is released,
// its CDI spec removed; a binding the checkpoint lacks is learned.
//
// Each prepared claim is read by its name, so the cost is the node's
// claims, not the cluster's, and the agent needs no right to list claims.
// A claim a checkpoint written before names were kept holds cannot be read:
// it is kept as it is, and kubelet unprepares it when its pod goes.
func (d *Driver) syncClaims(ctx context.Context) error {
	listedAt := time.Now()
	live := map[string]dmapi.ClaimStatus{}
	refs, err := d.cfg.Claims.PreparedClaims(ctx)
	if err != nil {
		return err
	}
	var nameless []string
	for _, ref := range refs {
		if ref.Name == "" {
			nameless = append(nameless, ref.UID)
			live[ref.UID] = dmapi.ClaimStatus{Unread: true}
			continue
		}
		claim, err := d.client.ResourceV1().ResourceClaims(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return fmt.Errorf("get ResourceClaim %s/%s: %w", ref.Namespace, ref.Name, err)
		case string(claim.UID) == ref.UID:
			live[ref.UID] = claimStatus(claim)
		}
	}
	if len(nameless) > 0 {
		d.log.InfoS("kept prepared claims unchecked: the checkpoint, written by an older agent, holds no name to read them by; kubelet unprepares them when their pods go", "count", len(nameless), "claims", nameless)
	}
	released, err := d.cfg.Claims.Sync(ctx, live, listedAt)
	if err != nil {
		return err
	}
	var errs []error
	for _, uid := range released {
		if err := d.specs.RemoveSpec(claims.CDISpecName(uid)); err != nil {
			errs = append(errs, fmt.Errorf("remove CDI spec of released claim %s from %s: %w", uid, d.cfg.CDIDir, err))
		}
	}
	if len(released) > 0 {
		d.log.InfoS("released claims the API server no longer reserves for a pod", "count", len(released), "claims", released)
	}
	return errors.Join(errs...)
}

func claimStatus(claim *resourceapi.ResourceClaim) dmapi.ClaimStatus {
	return dmapi.ClaimStatus{
		Reserved: claim.Status.Allocation != nil && len(claim.Status.ReservedFor) > 0,
		Pod:      claims.Pod(claim),
	}
}
