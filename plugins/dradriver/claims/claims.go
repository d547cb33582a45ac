package claims

import (
	"errors"
	"fmt"
	"strings"

	resourceapi "k8s.io/api/resource/v1"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

// DefaultDriverName is the DRA driver's name: ResourceSlices, DeviceClass
// selectors and allocation results carry it.
const DefaultDriverName = "memif.contivpp.io"

// ErrNotAllocated is matched by the error for a claim the scheduler has not
// allocated.
var ErrNotAllocated = errors.New("claim is not allocated")

// Requests returns the claim's requests that driver allocated from pool, in
// the order of the allocation results, each with its device IDs and the
// MemifConfig of the claim's opaque configs that applies to it (nil: none).
// A subrequest ("req/sub") counts as its request. A claim with none of them
// gets an empty list; a config that does not decode is an error naming
// the config, the field and what to write.
func Requests(claim *resourceapi.ResourceClaim, driver, pool string) ([]dmapi.ClaimRequest, error) {
	if claim.Status.Allocation == nil {
		return nil, fmt.Errorf("claim %s/%s: %w", claim.Namespace, claim.Name, ErrNotAllocated)
	}
	var requests []dmapi.ClaimRequest
	var allocated [][]string
	index := map[string]int{}
	for _, result := range claim.Status.Allocation.Devices.Results {
		if result.Driver != driver {
			continue
		}
		if result.Pool != pool {
			return nil, fmt.Errorf("claim %s/%s: request %q has device %s of pool %q, this node publishes pool %q; it was allocated for another node",
				claim.Namespace, claim.Name, result.Request, result.Device, result.Pool, pool)
		}
		name, _, _ := strings.Cut(result.Request, "/")
		i, seen := index[name]
		if !seen {
			i = len(requests)
			index[name] = i
			requests = append(requests, dmapi.ClaimRequest{Name: name})
			allocated = append(allocated, nil)
		}
		requests[i].DeviceIDs = append(requests[i].DeviceIDs, result.Device)
		allocated[i] = append(allocated[i], result.Request)
	}
	if err := applySpecs(claim, driver, requests, allocated); err != nil {
		return nil, err
	}
	return requests, nil
}

// ErrShared is matched by the error for a claim reserved for more than one
// pod.
var ErrShared = errors.New("memif claims cannot be shared")

// maxNamedConsumers bounds how many pods a refusal names.
const maxNamedConsumers = 4

// Unshared refuses a claim reserved for more than one pod. A memif has
// one pod at each end of its socket: the pods of a shared claim would get
// one socket directory, one secret and memif ID 0 each, and all but one
// would be left unconnected without a word.
func Unshared(claim *resourceapi.ResourceClaim) error {
	pods := podConsumers(claim)
	if len(pods) <= 1 {
		return nil
	}
	var names []string
	for _, pod := range pods[:min(len(pods), maxNamedConsumers)] {
		names = append(names, pod.Name)
	}
	if len(pods) > maxNamedConsumers {
		names = append(names, fmt.Sprintf("and %d more", len(pods)-maxNamedConsumers))
	}
	return fmt.Errorf("%w: claim %s/%s is reserved for %d pods (%s), and a memif connects one pod; give each pod its own claim through a ResourceClaimTemplate (the pod's spec.resourceClaims[].resourceClaimTemplateName)",
		ErrShared, claim.Namespace, claim.Name, len(pods), strings.Join(names, ", "))
}

func podConsumers(claim *resourceapi.ResourceClaim) []resourceapi.ResourceClaimConsumerReference {
	var pods []resourceapi.ResourceClaimConsumerReference
	for _, consumer := range claim.Status.ReservedFor {
		if consumer.APIGroup == "" && consumer.Resource == "pods" {
			pods = append(pods, consumer)
		}
	}
	return pods
}

// Pod returns the pod the claim is reserved for, in the claim's namespace.
// A claim reserved for no pod, or shared by several, binds to none: its
// allocations are then found by claim only.
func Pod(claim *resourceapi.ResourceClaim) podapi.Pod {
	pods := podConsumers(claim)
	if len(pods) != 1 {
		return podapi.Pod{}
	}
	return podapi.Pod{ID: podapi.PodID{Namespace: claim.Namespace, Name: pods[0].Name}, UID: string(pods[0].UID)}
}
