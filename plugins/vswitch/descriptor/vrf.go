package descriptor

import (
	"context"
	"fmt"

	vpp_l3 "github.com/ligato/vpp-agent/api/models/vpp/l3"
	kvs "github.com/ligato/vpp-agent/plugins/kvscheduler/api"

	"github.com/contivpp/memif-agent/internal/vppapi"
	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
	"github.com/contivpp/memif-agent/plugins/vswitch/owner"
)

// VrfTableDescriptorName names the VRF table descriptor.
const VrfTableDescriptorName = "vpp-vrf-table"

// VrfTables is the descriptor of vpp-agent VRF table models: one IPv4 or
// IPv6 table each, named in VPP by the model's label after owner.Prefix.
// That name marks a table as the agent's: Retrieve reports only those.
type VrfTables struct {
	conn ConnFunc
}

// NewVrfTables returns the descriptor; conn gives the VPP connection of
// each call.
func NewVrfTables(conn ConnFunc) *VrfTables {
	return &VrfTables{conn: conn}
}

// Descriptor returns the KV scheduler descriptor. Without an Update, a
// changed label re-creates the table, after the interfaces and routes in
// it (they depend on it).
func (d *VrfTables) Descriptor() *kvs.KVDescriptor {
	return withModel(vpp_l3.ModelVrfTable, typed[*vpp_l3.VrfTable, kvs.Metadata]{
		Name:     VrfTableDescriptorName,
		Validate: validateVrfTable,
		Create:   d.create,
		Delete:   d.delete,
		Retrieve: d.retrieve,
	}.descriptor())
}

func validateVrfTable(_ string, table *vpp_l3.VrfTable) error {
	switch {
	case table.Id == 0 || table.Id == ^uint32(0):
		return fmt.Errorf("VRF table ID %d: want 1 to %d (table 0 is VPP's own)", table.Id, ^uint32(0)-1)
	case table.Label == "" || len(table.Label) > owner.MaxNameLength:
		return fmt.Errorf("VRF table %d: label %q: want 1 to %d bytes (VPP's table name holds it after %q)", table.Id, table.Label, owner.MaxNameLength, owner.Prefix)
	}
	return nil
}

func vppTable(table *vpp_l3.VrfTable) vppmsg.IPTable {
	return vppmsg.IPTable{TableID: table.Id, IsIP6: table.Protocol == vpp_l3.VrfTable_IPV6, Name: owner.Tag(table.Label)}
}

func (d *VrfTables) create(_ string, table *vpp_l3.VrfTable) (kvs.Metadata, error) {
	conn, err := d.conn()
	if err == nil {
		err = request(context.Background(), conn, &vppmsg.IPTableAddDel{IsAdd: true, Table: vppTable(table)}, &vppmsg.IPTableAddDelReply{})
	}
	if err != nil {
		return nil, fmt.Errorf("create VRF table %d (%s, %s): %w", table.Id, table.Protocol, table.Label, err)
	}
	return nil, nil
}

func (d *VrfTables) delete(_ string, table *vpp_l3.VrfTable, _ kvs.Metadata) error {
	conn, err := d.conn()
	if err == nil {
		err = request(context.Background(), conn, &vppmsg.IPTableAddDel{Table: vppTable(table)}, &vppmsg.IPTableAddDelReply{})
	}
	if err != nil {
		return fmt.Errorf("delete VRF table %d (%s, %s): %w", table.Id, table.Protocol, table.Label, err)
	}
	return nil
}

func (d *VrfTables) retrieve([]typedKV[*vpp_l3.VrfTable, kvs.Metadata]) ([]typedKV[*vpp_l3.VrfTable, kvs.Metadata], error) {
	conn, err := d.conn()
	if err != nil {
		return nil, fmt.Errorf("read VRF tables from VPP: %w", err)
	}
	tables, err := ownTables(context.Background(), conn)
	if err != nil {
		return nil, err
	}
	values := make([]typedKV[*vpp_l3.VrfTable, kvs.Metadata], 0, len(tables))
	for _, table := range tables {
		values = append(values, typedKV[*vpp_l3.VrfTable, kvs.Metadata]{Key: vpp_l3.VrfTableKey(table.Id, table.Protocol), Value: table, Origin: kvs.FromNB})
	}
	return values, nil
}

// ownTables returns VPP's tables named as the agent's.
func ownTables(ctx context.Context, conn *vppapi.Conn) ([]*vpp_l3.VrfTable, error) {
	details, err := vppapi.Dump[vppmsg.IPTableDetails](ctx, conn, &vppmsg.IPTableDump{})
	if err != nil {
		return nil, fmt.Errorf("dump VPP IP tables: %w", err)
	}
	var tables []*vpp_l3.VrfTable
	for _, d := range details {
		t := d.Table
		label, ours := owner.Name(t.Name)
		if t.TableID == 0 || t.TableID == ^uint32(0) || !ours {
			continue
		}
		table := &vpp_l3.VrfTable{Id: t.TableID, Protocol: vpp_l3.VrfTable_IPV4, Label: label}
		if t.IsIP6 {
			table.Protocol = vpp_l3.VrfTable_IPV6
		}
		tables = append(tables, table)
	}
	return tables, nil
}
