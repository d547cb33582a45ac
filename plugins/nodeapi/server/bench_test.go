package server_test

import (
	"fmt"
	"testing"

	memifv1 "github.com/contivpp/memif-agent/api/memif/v1"
	"github.com/contivpp/memif-agent/plugins/nodeapi/server"
	"github.com/contivpp/memif-agent/test/kit/devicemanagertest"
)

// BenchmarkListAllocations compares a ListAllocations call over the API's
// Unix socket with reading the device manager in-process (the baseline):
// the ratio is what the API costs a node process.
func BenchmarkListAllocations(b *testing.B) {
	devices, loop := devicemanagertest.Start(b, fixedClock)
	for i := range devicemanagertest.DeviceCount {
		devicemanagertest.Allocate(b, loop, fmt.Sprintf("memif-%03d", i))
	}
	b.Run("in-process baseline", func(b *testing.B) {
		for b.Loop() {
			if len(devices.ListAllocations()) != devicemanagertest.DeviceCount {
				b.Fatal("lost allocations")
			}
		}
	})
	b.Run("over the unix socket", func(b *testing.B) {
		client := startAPI(b, devices, nil, server.Config{})
		for b.Loop() {
			resp, err := client.ListAllocations(b.Context(), &memifv1.ListAllocationsRequest{})
			if err != nil || len(resp.Allocations) != devicemanagertest.DeviceCount {
				b.Fatalf("ListAllocations: %v", err)
			}
		}
	})
}
