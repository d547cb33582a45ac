// Package api is the Go API of the networks plugin: the NetworksChanged
// event it pushes into the controller's event loop when networks.conf
// changes, and the Source its handlers read the networks from at a resync.
// It owns types only.
package api

import (
	"fmt"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	"github.com/contivpp/memif-agent/plugins/networks/netconf"
)

// Source hands out the networks networks.conf declares now (with
// memifwiring.conf's legacy keys applied). Safe from any goroutine.
type Source interface {
	Networks() netconf.Config
}

// NetworksChanged is pushed when a new valid networks.conf is read:
// handlers apply Config as netconf.Reconcile allows while pods use the
// networks. It is best effort: a failure is healed by the resync, which
// reads the Source again.
type NetworksChanged struct {
	Config netconf.Config
}

// Spec implements controllerapi.Event.
func (*NetworksChanged) Spec() controllerapi.EventSpec {
	return controllerapi.EventSpec{Name: "NetworksChanged",
		Transaction: controllerapi.BestEffort, Direction: controllerapi.Forward}
}

// String implements controllerapi.Event.
func (e *NetworksChanged) String() string {
	names := make([]string, len(e.Config.Networks))
	for i, n := range e.Config.Networks {
		names[i] = fmt.Sprintf("%s(%s)", n.Name, n.Type)
	}
	return fmt.Sprintf("NetworksChanged networks %v default %q", names, e.Config.DefaultNetwork)
}
