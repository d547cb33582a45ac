// Package devicemanager is the cn-infra plugin of the device manager: it
// reads devicemanager.conf, creates the framework-free manager
// (plugins/devicemanager/manager), starts it with the controller event loop
// and stops it at shutdown. All logic lives in the sub-packages:
//
//   - config: keys, defaults, validation (devicemanager.conf documents them);
//   - checkpoint: the persisted allocations;
//   - allocation: devices, allocations, binding to pods, collection;
//   - deviceplugin: the kubelet-facing gRPC server and registration;
//   - devicehealth: the devices' health from the vswitch's reachability;
//   - deviceinfo: the device-info spec's files of kubelet's allocations;
//   - manager: the event handler and DeviceManagerAPI over them.
//
// The devices' health: given the vswitch plugin as Vswitch (its Go API,
// plugins/vswitch/api), the plugin reports every device Unhealthy to
// kubelet (ListAndWatch), and to the DRA driver (DeviceHealth, which
// taints its ResourceSlice), while VPP has been unreachable for longer
// than vswitch-health-grace, and Healthy again as soon as VPP answers.
//
// The plugin is an event handler: internal/agentwiring lists it among the
// controller's EventHandlers and then gives it the controller as its
// EventLoop (the two refer to each other, so one of them is set after both
// exist):
//
//	deviceManager := devicemanager.NewPlugin(devicemanager.UseDeps(func(deps *devicemanager.Deps) {
//		deps.LivePods = podManager // optional: its decisions release gone pods
//		deps.Prometheus = metrics  // optional
//	}))
//	eventLoop := controller.NewPlugin(controller.UseDeps(func(deps *controller.Deps) {
//		deps.EventHandlers = []controllerapi.EventHandler{deviceManager, memifWiring}
//	}))
//	deviceManager.EventLoop = eventLoop
//	deviceManager.Vswitch = vswitchPlugin // optional: device health
//
// The agent (internal/agentwiring) hands the vswitch plugin over wrapped
// in a struct that is no plugin: cn-infra would otherwise start the
// vswitch before the device manager, and so before the controller whose
// loop the vswitch pushes into from its Init.
//
// cn-infra starts it before the controller, whose handler it is
// (TestPluginsStartAfterWhatTheyWaitFor in cmd/memif-agent checks the
// order), so its device plugin server may serve before the controller's
// AfterInit starts the loop: a kubelet Allocate that arrives then waits in
// the queue and runs after the startup resync. The config file is devicemanager.conf (flag
// -devicemanager-config); a missing file means the defaults.
//
// To run the device manager without cn-infra (tests, benchmarks, the
// kubelet end-to-end harness), use manager.New and Manager.Start; the
// manager package doc has an example.
package devicemanager
