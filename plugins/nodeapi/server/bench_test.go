package server_test

import (
	"fmt"
	"testing"

	memifv1 "github.com/contivpp/memif-agent/api/memif/v1"
	"github.com/contivpp/memif-agent/internal/testutil/devicemanagerstandin"
	"github.com/contivpp/memif-agent/plugins/nodeapi/server"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

// BenchmarkListAllocations compares a ListAllocations call over the API's
// Unix socket with reading the device manager in-process (the baseline):
// the ratio is what the API costs a node process.
func BenchmarkListAllocations(b *testing.B) {
	devices := devicemanagerstandin.New()
	for i := range 100 {
		info := webMemif()
		info.AllocationID = fmt.Sprintf("alloc-%03d", i)
		info.Pod = podapi.PodID{Namespace: "default", Name: fmt.Sprintf("pod-%03d", i)}
		devices.Allocate(info)
	}
	b.Run("in-process baseline", func(b *testing.B) {
		for b.Loop() {
			if len(devices.ListAllocations()) != 100 {
				b.Fatal("lost allocations")
			}
		}
	})
	b.Run("over the unix socket", func(b *testing.B) {
		client := startAPI(b, devices, nil, server.Config{})
		for b.Loop() {
			resp, err := client.ListAllocations(b.Context(), &memifv1.ListAllocationsRequest{})
			if err != nil || len(resp.Allocations) != 100 {
				b.Fatalf("ListAllocations: %v", err)
			}
		}
	})
}
