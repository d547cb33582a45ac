package descriptor

import (
	"context"
	"fmt"

	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"
	vpp_l2 "github.com/ligato/vpp-agent/api/models/vpp/l2"
	kvs "github.com/ligato/vpp-agent/plugins/kvscheduler/api"

	"github.com/contivpp/memif-agent/internal/vppapi"
	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
)

// XConnectDescriptorName names the L2 cross-connect descriptor.
const XConnectDescriptorName = "vpp-xconnect"

// Dependency labels of a cross-connect.
const (
	receiveInterfaceExists  = "receive-interface-exists"
	transmitInterfaceExists = "transmit-interface-exists"
)

// XConnects is the descriptor of vpp-agent L2 cross-connect models: one
// direction each, frames received on ReceiveInterface are sent out of
// TransmitInterface (sw_interface_set_l2_xconnect). A pair of pods is two
// models, one per direction.
type XConnects struct {
	conn       ConnFunc
	interfaces InterfaceIndex
}

// NewXConnects returns the descriptor; conn gives the VPP connection of
// each call, interfaces the indexes of the interfaces it connects.
func NewXConnects(conn ConnFunc, interfaces InterfaceIndex) *XConnects {
	return &XConnects{conn: conn, interfaces: interfaces}
}

// Descriptor returns the KV scheduler descriptor. A cross-connect waits
// (pending) until both of its interfaces exist, and is taken down before
// either is deleted. Without an Update, a changed transmit interface is a
// re-creation.
func (d *XConnects) Descriptor() *kvs.KVDescriptor {
	return withModel(vpp_l2.ModelXConnectPair, typed[*vpp_l2.XConnectPair, kvs.Metadata]{
		Name:                 XConnectDescriptorName,
		Validate:             validateXConnect,
		Create:               d.create,
		Delete:               d.delete,
		Retrieve:             d.retrieve,
		Dependencies:         xconnectDependencies,
		RetrieveDependencies: []string{InterfaceDescriptorName},
	}.descriptor())
}

func validateXConnect(_ string, xc *vpp_l2.XConnectPair) error {
	switch {
	case xc.ReceiveInterface == "" || xc.TransmitInterface == "":
		return fmt.Errorf("cross-connect %q -> %q: want both interfaces named", xc.ReceiveInterface, xc.TransmitInterface)
	case xc.ReceiveInterface == xc.TransmitInterface:
		return fmt.Errorf("cross-connect of %s to itself: want two interfaces", xc.ReceiveInterface)
	}
	return nil
}

func xconnectDependencies(_ string, xc *vpp_l2.XConnectPair) []kvs.Dependency {
	return []kvs.Dependency{
		{Label: receiveInterfaceExists, Key: vpp_interfaces.InterfaceKey(xc.ReceiveInterface)},
		{Label: transmitInterfaceExists, Key: vpp_interfaces.InterfaceKey(xc.TransmitInterface)},
	}
}

func (d *XConnects) create(_ string, xc *vpp_l2.XConnectPair) (kvs.Metadata, error) {
	conn, rx, tx, err := d.pair(xc)
	if err == nil {
		err = request(context.Background(), conn, &vppmsg.SwInterfaceSetL2Xconnect{RxSwIfIndex: rx, TxSwIfIndex: tx, Enable: true},
			&vppmsg.SwInterfaceSetL2XconnectReply{})
	}
	if err != nil {
		return nil, fmt.Errorf("cross-connect %s -> %s: %w", xc.ReceiveInterface, xc.TransmitInterface, err)
	}
	return nil, nil
}

// delete puts the receive interface back in L3 mode, unless VPP no longer
// cross-connects it to the transmit interface (something else, such as a
// bridge domain, holds it now).
func (d *XConnects) delete(_ string, xc *vpp_l2.XConnectPair, _ kvs.Metadata) error {
	ctx := context.Background()
	conn, rx, tx, err := d.pair(xc)
	var current map[vppmsg.InterfaceIndex]vppmsg.InterfaceIndex
	if err == nil {
		current, err = dumpXConnects(ctx, conn)
	}
	if sent, crossConnected := current[rx]; err == nil && crossConnected && sent == tx {
		err = request(ctx, conn, &vppmsg.SwInterfaceSetL2Xconnect{RxSwIfIndex: rx, Enable: false}, &vppmsg.SwInterfaceSetL2XconnectReply{})
	}
	if err != nil {
		return fmt.Errorf("remove cross-connect %s -> %s: %w", xc.ReceiveInterface, xc.TransmitInterface, err)
	}
	return nil
}

// pair returns the connection and the indexes of a cross-connect's
// interfaces.
func (d *XConnects) pair(xc *vpp_l2.XConnectPair) (*vppapi.Conn, vppmsg.InterfaceIndex, vppmsg.InterfaceIndex, error) {
	conn, err := d.conn()
	if err != nil {
		return nil, 0, 0, err
	}
	rx, err := d.interfaces.lookup(conn, xc.ReceiveInterface)
	if err != nil {
		return nil, 0, 0, err
	}
	tx, err := d.interfaces.lookup(conn, xc.TransmitInterface)
	if err != nil {
		return nil, 0, 0, err
	}
	return conn, rx.Index, tx.Index, nil
}

// retrieve reports every cross-connect between two of the agent's
// interfaces.
func (d *XConnects) retrieve([]typedKV[*vpp_l2.XConnectPair, kvs.Metadata]) ([]typedKV[*vpp_l2.XConnectPair, kvs.Metadata], error) {
	conn, err := d.conn()
	if err != nil {
		return nil, fmt.Errorf("read cross-connects from VPP: %w", err)
	}
	ctx := context.Background()
	xconnects, err := dumpXConnects(ctx, conn)
	if err != nil {
		return nil, err
	}
	var values []typedKV[*vpp_l2.XConnectPair, kvs.Metadata]
	for rxIndex, txIndex := range xconnects {
		rx, rxFound := d.interfaces.Name(rxIndex)
		tx, txFound := d.interfaces.Name(txIndex)
		if !rxFound || !txFound {
			continue
		}
		values = append(values, typedKV[*vpp_l2.XConnectPair, kvs.Metadata]{Key: vpp_l2.XConnectKey(rx),
			Value: &vpp_l2.XConnectPair{ReceiveInterface: rx, TransmitInterface: tx}, Origin: kvs.FromNB})
	}
	return values, nil
}

// dumpXConnects returns VPP's cross-connects: the transmit interface of
// each receive interface.
func dumpXConnects(ctx context.Context, conn *vppapi.Conn) (map[vppmsg.InterfaceIndex]vppmsg.InterfaceIndex, error) {
	details, err := vppapi.Dump[vppmsg.L2XconnectDetails](ctx, conn, &vppmsg.L2XconnectDump{})
	if err != nil {
		return nil, fmt.Errorf("dump VPP cross-connects: %w", err)
	}
	xconnects := make(map[vppmsg.InterfaceIndex]vppmsg.InterfaceIndex, len(details))
	for _, xc := range details {
		xconnects[xc.RxSwIfIndex] = xc.TxSwIfIndex
	}
	return xconnects, nil
}
