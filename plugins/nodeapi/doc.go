// Package nodeapi is the cn-infra plugin that serves the node-local gRPC API
// (api/memif/v1) on a Unix socket. It is a thin adapter: configuration
// (nodeapi.conf), lifecycle, and the wiring of the device manager and the
// controller's event history into plugins/nodeapi/server, which does the
// work.
//
// It reads the device manager and the event history; it changes nothing in
// either, and pushes no events.
//
// Example (internal/agentwiring):
//
//	nodeAPI := nodeapi.NewPlugin(nodeapi.UseDeps(func(deps *nodeapi.Deps) {
//		deps.DeviceManager = deviceManager
//		deps.Controller = controllerPlugin // a controllerapi.EventHistory
//	}))
package nodeapi
