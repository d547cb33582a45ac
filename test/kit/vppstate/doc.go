// Package vppstate reads what a running VPP holds for the pods' memifs, the
// way the demos show it: VPP's version, the memif master on an allocation's
// socket, its link state, its counters and the bridge domain it is in, over
// VPP's binary API (package vppapi) with the CLI (cli_inband) for counters.
// It only reads: the agent is what programs VPP.
//
// It is apart from package vpp, which starts VPP for tests, because
// vppapi's own tests use that package.
//
// The package owns its API connection; Close ends it.
//
// Example:
//
//	s, err := vppstate.Dial(ctx, v.APISocket, "memif-demo")
//	memif, err := s.WaitMemif(ctx, allocation.HostSocket)
//	err = s.WaitLinkUp(ctx, memif)
//	counters, err := s.Counters(ctx, memif)
package vppstate
