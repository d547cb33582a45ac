// Package fakevswitch stands in for the vswitch behind the event loop in
// tests where none runs: its Committer accepts every transaction and keeps
// nothing. Tests that check what reaches the vswitch commit to the real KV
// scheduler (or record the commits) instead; InterfaceDescriptor makes the
// KV descriptor such a test registers there in place of VPP's interfaces.
package fakevswitch
