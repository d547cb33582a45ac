package claims

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	resourceapi "k8s.io/api/resource/v1"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/networks/memifspec"
)

// configExample is what a claim's opaque config for the driver looks like,
// for the messages that refuse one.
const configExample = `{"apiVersion": "` + memifspec.APIVersion + `", "kind": "` + memifspec.Kind + `", "network": "red"}`

// applySpecs sets each request's Spec from the claim's opaque configs for
// driver (its MemifConfig). A config applies to the requests it names, or
// to every request when it names none; a request's own name covers its
// subrequests, "request/subrequest" that subrequest only. Every config
// that applies to a request is decoded strictly, and a bad one refuses
// the claim; of those that apply, the last wins: the allocator lists the
// device class's configs before the claim's, so the claim overrides its
// class. allocated are the full request names ("req" or "req/sub") of
// each request's devices.
func applySpecs(claim *resourceapi.ResourceClaim, driver string, requests []dmapi.ClaimRequest, allocated [][]string) error {
	var problems []error
	for i, config := range claim.Status.Allocation.Devices.Config {
		if config.Opaque == nil || config.Opaque.Driver != driver {
			continue
		}
		var spec *memifspec.Spec
		for r := range requests {
			if !appliesTo(config.Requests, allocated[r]) {
				continue
			}
			if spec == nil {
				decoded, err := decodeConfig(config.Opaque.Parameters.Raw)
				if err != nil {
					problems = append(problems, fmt.Errorf("opaque config %d (%s) for driver %s: %w; write the parameters as a %s such as %s",
						i+1, sourceOf(config.Source), driver, err, memifspec.Kind, configExample))
					break
				}
				spec = &decoded
			}
			requests[r].Spec = spec
		}
	}
	if err := errors.Join(problems...); err != nil {
		return fmt.Errorf("claim %s/%s: %w", claim.Namespace, claim.Name, err)
	}
	return nil
}

func decodeConfig(raw []byte) (memifspec.Spec, error) {
	if len(raw) == 0 {
		return memifspec.Spec{}, errors.New("it has no parameters")
	}
	return memifspec.DecodeConfig(raw)
}

// appliesTo tells whether a config naming names applies to a request
// whose devices were allocated for the full request names allocated.
func appliesTo(names []string, allocated []string) bool {
	if len(names) == 0 {
		return true
	}
	for _, full := range allocated {
		main, _, _ := strings.Cut(full, "/")
		if slices.Contains(names, main) || slices.Contains(names, full) {
			return true
		}
	}
	return false
}

func sourceOf(source resourceapi.AllocationConfigSource) string {
	if source == resourceapi.AllocationConfigSourceClass {
		return "from the device class"
	}
	return "from the claim"
}
