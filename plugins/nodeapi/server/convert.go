package server

import (
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	memifv1 "github.com/contivpp/memif-agent/api/memif/v1"
	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
)

func toAllocation(info dmapi.MemifInfo, includeSecret bool) *memifv1.MemifAllocation {
	alloc := &memifv1.MemifAllocation{
		AllocationId:    info.AllocationID,
		DeviceIds:       append([]string(nil), info.DeviceIDs...),
		PodNamespace:    info.Pod.Namespace,
		PodName:         info.Pod.Name,
		PodUid:          info.PodUID,
		ContainerName:   info.ContainerName,
		HostDir:         info.HostDir,
		HostSocket:      info.HostSocket,
		ContainerSocket: info.ContainerSocket,
		AllocatedAt:     toTimestamp(info.AllocatedAt),
	}
	if includeSecret {
		alloc.Secret = info.Secret
	}
	for _, n := range info.Networks {
		alloc.Networks = append(alloc.Networks, toNetwork(n))
	}
	return alloc
}

func toNetwork(n dmapi.MemifNetwork) *memifv1.MemifNetwork {
	return &memifv1.MemifNetwork{
		MemifId:        n.MemifID,
		Network:        n.Network,
		Mode:           n.Mode,
		Ips:            append([]string(nil), n.IPs...),
		Gateway:        append([]string(nil), n.Gateway...),
		Mac:            n.MAC,
		Queues:         n.Queues,
		RingSize:       n.RingSize,
		BufferSize:     n.BufferSize,
		Mtu:            n.MTU,
		RxMode:         n.RxMode,
		RefusedReason:  n.Reason,
		RefusedMessage: n.Refused,
	}
}

func toChangeKind(kind dmapi.AllocationChangeKind) memifv1.ChangeKind {
	switch kind {
	case dmapi.Allocated:
		return memifv1.ChangeKind_CHANGE_KIND_ALLOCATED
	case dmapi.Bound:
		return memifv1.ChangeKind_CHANGE_KIND_BOUND
	case dmapi.Released:
		return memifv1.ChangeKind_CHANGE_KIND_RELEASED
	}
	return memifv1.ChangeKind_CHANGE_KIND_UNSPECIFIED
}

func toEventRecord(record controllerapi.EventRecord) *memifv1.EventRecord {
	msg := &memifv1.EventRecord{
		Seq:         record.SeqNum,
		Name:        record.Name,
		Description: record.Description,
		Method:      record.Method,
		TxnType:     record.TxnType,
		Direction:   record.Direction,
		Committed:   uint32(max(record.Committed, 0)),
		StartedAt:   toTimestamp(record.Start),
		FinishedAt:  toTimestamp(record.End),
		Error:       record.Error,
	}
	for _, handler := range record.Handlers {
		msg.Handlers = append(msg.Handlers, &memifv1.HandlerRecord{
			Handler: handler.Handler,
			Action:  handler.Action,
			Change:  handler.Change,
			Error:   handler.Error,
		})
	}
	return msg
}

// toTimestamp leaves an unknown time unset rather than sending year 1.
func toTimestamp(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}
