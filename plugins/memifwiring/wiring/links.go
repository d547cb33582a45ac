package wiring

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	vswitchapi "github.com/contivpp/memif-agent/plugins/vswitch/api"
)

// MemifInterface is the pod side of one vswitch memif interface.
type MemifInterface struct {
	Pod    podapi.PodID
	PodUID string
	// Container holds the memif's allocation; empty when unknown (a
	// claim's memif).
	Container string
	MemifID   int
	// Network is the memif's network; empty when in none or not known
	// yet.
	Network string
	// AllocationID is the allocation holding the memif.
	AllocationID string
}

// MemifInterfaces names the vswitch interface of each memif of the
// allocations bound to a pod, as Render names them, and says whose it
// is. It reads only allocations: safe from any goroutine.
func MemifInterfaces(allocations []dmapi.MemifInfo) map[string]MemifInterface {
	byPod := map[podapi.PodID][]dmapi.MemifInfo{}
	for _, memif := range allocations {
		if memif.Pod.Name != "" {
			byPod[memif.Pod] = append(byPod[memif.Pod], memif)
		}
	}
	interfaces := map[string]MemifInterface{}
	for pod, memifs := range byPod {
		owners := ownerNames(memifs)
		for i, memif := range memifs {
			for memifID := range memif.DeviceIDs {
				iface := MemifInterface{Pod: pod, PodUID: memif.PodUID, Container: memif.ContainerName, MemifID: memifID, AllocationID: memif.AllocationID}
				for _, n := range memif.Networks {
					if int(n.MemifID) == memifID {
						iface.Network = n.Network
					}
				}
				interfaces[interfaceName(pod, owners[i], memifID)] = iface
			}
		}
	}
	return interfaces
}

// LinkCollector is the Prometheus collector of the memifs' links and VPP
// counters: it joins what the vswitch plugin last read from VPP with the
// pods holding the memifs, at each scrape, without asking VPP.
type LinkCollector struct {
	links       vswitchapi.LinkReader
	allocations func() []dmapi.MemifInfo
}

// NewLinkCollector returns the collector of links, whose pods are
// found among allocations (the device manager's ListAllocations).
func NewLinkCollector(links vswitchapi.LinkReader, allocations func() []dmapi.MemifInfo) *LinkCollector {
	return &LinkCollector{links: links, allocations: allocations}
}

// The labels of every memif metric.
var linkLabels = []string{"namespace", "pod", "container", "memif", "interface", "vpp_interface", "network"}

// The memif metrics.
var (
	linkUpDesc = prometheus.NewDesc("memif_interface_link_up",
		"1 while the memif's pod side is connected to VPP, 0 while not.", linkLabels, nil)
	linkDownDesc = prometheus.NewDesc("memif_interface_link_down_since_seconds",
		"When the agent saw the memif's link go down (Unix time); absent while up.", linkLabels, nil)
	rxPacketsDesc = prometheus.NewDesc("memif_interface_rx_packets_total",
		"Packets VPP received on the memif from the pod (VPP's interface counters, since VPP made the interface).", linkLabels, nil)
	rxBytesDesc = prometheus.NewDesc("memif_interface_rx_bytes_total",
		"Bytes VPP received on the memif from the pod.", linkLabels, nil)
	txPacketsDesc = prometheus.NewDesc("memif_interface_tx_packets_total",
		"Packets VPP sent on the memif to the pod.", linkLabels, nil)
	txBytesDesc = prometheus.NewDesc("memif_interface_tx_bytes_total",
		"Bytes VPP sent on the memif to the pod.", linkLabels, nil)
	dropsDesc = prometheus.NewDesc("memif_interface_drops_total",
		"Packets from the pod that VPP dropped (VPP's drops counter of the interface).", linkLabels, nil)
)

// Describe implements prometheus.Collector.
func (c *LinkCollector) Describe(descs chan<- *prometheus.Desc) {
	for _, desc := range []*prometheus.Desc{linkUpDesc, linkDownDesc, rxPacketsDesc, rxBytesDesc, txPacketsDesc, txBytesDesc, dropsDesc} {
		descs <- desc
	}
}

// Collect implements prometheus.Collector.
func (c *LinkCollector) Collect(metrics chan<- prometheus.Metric) {
	owners := MemifInterfaces(c.allocations())
	for _, link := range c.links.MemifLinks() {
		owner := owners[link.Name]
		labels := []string{owner.Pod.Namespace, owner.Pod.Name, owner.Container, strconv.Itoa(owner.MemifID), link.Name, link.VPPName, owner.Network}
		if owner.Pod.Name == "" {
			labels[3] = ""
		}
		up := 0.0
		if link.Up {
			up = 1
		} else {
			metrics <- prometheus.MustNewConstMetric(linkDownDesc, prometheus.GaugeValue, float64(link.DownSince.UnixNano())/1e9, labels...)
		}
		metrics <- prometheus.MustNewConstMetric(linkUpDesc, prometheus.GaugeValue, up, labels...)
		for desc, value := range map[*prometheus.Desc]uint64{rxPacketsDesc: link.Counters.RxPackets, rxBytesDesc: link.Counters.RxBytes,
			txPacketsDesc: link.Counters.TxPackets, txBytesDesc: link.Counters.TxBytes, dropsDesc: link.Counters.Drops} {
			metrics <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(value), labels...)
		}
	}
}
