package api

import (
	"context"
	"time"

	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

// ClaimPreparer makes and releases the allocations of the DRA driver's
// ResourceClaims; the device manager implements it. The driver only
// translates kubelet's calls and the API server's claims into its
// methods: how a claim becomes allocations, and through which events,
// is the device manager's. Its methods are safe from any goroutine and
// block until the device manager has answered or ctx ends.
type ClaimPreparer interface {
	// Prepare makes one allocation per request of the claim, bound to pod
	// (empty: the claim names none), and returns what each request got,
	// ordered by request name. A claim already prepared gets what it
	// holds: kubelet retries, and prepares again after its restart. On
	// failure none of the claim's allocations is left.
	Prepare(ctx context.Context, claim ClaimRef, pod podapi.Pod, requests []ClaimRequest) ([]PreparedRequest, error)
	// Unprepare releases the claim's allocations, the vswitch side of its
	// pod first. A claim holding none (never prepared, or released
	// already) is not an error.
	Unprepare(ctx context.Context, claim ClaimRef) error
	// Sync judges the claims prepared before listedAt against live, the
	// API server's status of each by UID: a claim live lacks, or reserved
	// for no pod, is released; an unbound one reserved for one pod is
	// bound to it. It returns the UIDs of the claims released, sorted.
	Sync(ctx context.Context, live map[string]ClaimStatus, listedAt time.Time) (released []string, err error)
	PreparedClaimsSource
}
