// Package podmanager is the cn-infra plugin that tells the rest of the agent
// which pods live on the node, the one place that decides a pod is gone.
// It turns the container runtime's pod lifecycle into AddPod, DeletePod
// and LivePods events in the controller event loop and implements
// api.LivePodsSource and api.PodResolver, from the container
// runtime (a CRI runtime through package cripods, or Docker through package
// dockerpods; podmanager.conf's runtime chooses, runtime.go) and kubelet's
// pod-resources API (package podresources) together.
//
// It is a thin adapter over package podtracker: it reads podmanager.conf
// (flag -podmanager-config), creates the runtime and pod-resources clients,
// starts the tracker in AfterInit and stops it in Close. It owns no
// allocation state and pushes events only; handlers decide what a pod means
// to them.
//
// Example (internal/agentwiring):
//
//	podManager := podmanager.NewPlugin(podmanager.UseDeps(func(deps *podmanager.Deps) {
//		deps.EventLoop = controllerPlugin
//	}))
//	deviceManager := devicemanager.NewPlugin(devicemanager.UseDeps(func(deps *devicemanager.Deps) {
//		deps.EventLoop = controllerPlugin
//		deps.LivePods = podManager
//		deps.PodResolver = podManager
//	}))
//
// RequestLivePods may be called from Init on (the device manager calls it
// at the controller's startup resync); events are pushed from AfterInit
// on.
package podmanager
