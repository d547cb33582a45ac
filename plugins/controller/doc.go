// Package controller is the cn-infra plugin that runs the controller event
// loop (package eventloop) inside the agent. It is a thin adapter: it reads
// controller.conf, commits every event's transaction to the vpp-agent KV
// scheduler, serves the loop's REST API (GET /controller/event-history,
// POST /controller/resync), registers its Prometheus metrics and reports the
// loop's health to a status check (the agent's plugins/health), so that the
// readiness probe fails while the configuration is out of sync.
//
// It owns the loop's lifecycle and nothing else: the event handlers are the
// other plugins, listed by internal/agentwiring in the order they must see
// events.
//
// The loop is created in Init and started in AfterInit, with the startup
// resync. Plugins push events through the api.EventLoop interface once the
// controller's Init has made the loop (the vswitch from its Init, the others
// from their AfterInit); events pushed before the startup resync has finished
// are held and run after it. Close runs a shutdown event through the handlers, before
// cn-infra closes them.
//
// Example (internal/agentwiring):
//
//	controllerPlugin := controller.NewPlugin(controller.UseDeps(func(deps *controller.Deps) {
//		deps.KVScheduler = scheduler
//		deps.HTTPHandlers = httpServer
//		deps.StatusCheck = agentHealth // plugins/health
//		deps.Prometheus = metrics
//		deps.EventHandlers = []api.EventHandler{deviceManager, memifWiring}
//	}))
package controller
