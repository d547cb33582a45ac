// Package devicemanagertest runs the agent's real device manager
// (plugins/devicemanager/manager) over temporary directories, as a handler
// of the real controller event loop, for the tests of the packages that
// read DeviceManagerAPI: the node API, memifctl and the memif wiring.
//
// It drives the manager only through events (AllocateDevice as kubelet's
// Allocate pushes it, AddPod and DeletePod as the pod manager pushes them)
// and waits until their effect is visible. It owns only the temporary
// directories of the test that calls it; the agent must not use it.
package devicemanagertest
