// Package devicemanagertest runs the agent's real device manager
// (plugins/devicemanager/manager) over temporary directories, as a handler
// of the real controller event loop, for the tests of the packages that
// read DeviceManagerAPI: the node API, memifctl and the memif wiring.
//
// It drives the manager only through events (AllocateDevice as kubelet's
// Allocate pushes it, AddPod and DeletePod as the pod manager pushes them)
// and waits until their effect is visible. It owns only the temporary
// directories of the test that calls it; the agent must not use it.
//
// It is a unit kit, a level below internal/inprocess: a manager and a loop,
// with no plugin, config file, cn-infra start order or other handler, for
// packages the agent's wiring imports (their own tests cannot import
// inprocess, which imports them) and for tests that drive one handler's
// events. A test of the agent as it runs, its plugins wired as
// cmd/memif-agent wires them, uses inprocess instead.
package devicemanagertest
