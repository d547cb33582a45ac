// Package dradriver is the cn-infra plugin of the DRA driver
// memif.contivpp.io: it reads dradriver.conf, and when the driver is enabled
// it connects to the API server, starts the kubelet-facing driver
// (plugins/dradriver/kubeletdriver) with the controller event loop and the
// device manager's claim pool, and stops it at shutdown. All logic lives in
// the sub-packages:
//
//   - claims: a claim's requests and pod, CDI spec and slice contents;
//   - claimprefetch: the claims of the node's pods, read as the pods are
//     bound, ahead of kubelet's NodePrepareResources;
//   - kubeletdriver: kubelet's DRA gRPC API, registration, ResourceSlices,
//     CDI spec files;
//   - claimstatus: each prepared claim's status.devices (addresses,
//     conditions Ready and LinkUp, memif.json's entry), written by a
//     goroutine the plugin starts with the driver and stops at Close.
//
// The device manager makes and releases the allocations (PrepareClaim and
// UnprepareClaim events), so the driver and kubelet's device plugin share
// one allocation core, one checkpoint and one node-local API; each is
// switched on by its own config (dradriver.conf enabled, devicemanager.conf
// device-plugin), and the claim devices are a pool of their own
// (devicemanager.conf claim-device-count).
//
//	draDriver := dradriver.NewPlugin(dradriver.UseDeps(func(deps *dradriver.Deps) {
//		deps.EventLoop = eventLoop
//		deps.DeviceManager = deviceManager
//		deps.Vswitch = vswitchPlugin // links and reachability, for the claims' status
//	}))
//
// List it after the controller and the device manager in the agent.
package dradriver
