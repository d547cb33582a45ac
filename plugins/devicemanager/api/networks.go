package api

// MemifNetwork is what one memif of an allocation got from the node's
// networks, as the memif wiring resolved it.
type MemifNetwork struct {
	MemifID uint32
	// Network is empty for a memif in no network.
	Network string
	// Mode is "ip" or "ethernet".
	Mode string
	// IPs are the pod side's addresses with the subnet's prefix length;
	// Gateway the node side's, for a memif of an l3 network.
	IPs     []string
	Gateway []string
	// MAC is the pod side's, when its spec set one.
	MAC                          string
	Queues, RingSize, BufferSize uint32
	MTU                          uint32
	RxMode                       string
	// Refused, when set, says why the memif is not wired; Reason is its
	// metric label (memifspec.Reason).
	Refused string
	Reason  string
}

// NetworkRecorder is what the memif wiring tells the device manager of
// each allocation's networks; the device manager implements it. Its
// methods are called on the controller's event loop.
type NetworkRecorder interface {
	// SetMemifNetworks records what allocationID's memifs got (nil:
	// nothing); the device manager's lookups return it in
	// MemifInfo.Networks.
	SetMemifNetworks(allocationID string, networks []MemifNetwork)
	// WriteMemifJSON replaces memif.json in allocationID's socket
	// directory by content, atomically, mode 0640 with the directory's
	// group.
	WriteMemifJSON(allocationID string, content []byte) error
	// NetworksStatePath is the file the memif wiring keeps the networks'
	// records and addresses in: beside the device manager's checkpoint.
	NetworksStatePath() string
}
