// Package manager is the device manager without its plugin framework: the
// controller event handler that makes, binds and releases memif
// allocations, the kubelet device plugin server it starts, and the
// DeviceManagerAPI sibling plugins read.
//
// It owns the allocation directories under the socket root, the
// checkpoint (its snapshot and journal files), and the device-info files
// of its resource's devices in device-info-dir (deviceinfo.go). The socket root must be the
// agent's own (owned by its user, writable by no other user nor group but
// dir-group; one it makes is 0700); every directory under it is made,
// chmodded, chowned and removed through the root's descriptor without
// following links (internal/securedir). Releasing a directory costs the
// event loop a bounded number of calls whatever the pod left in it: one of
// a few files is removed at once; any other is renamed into .trash under
// the socket root (0700, the agent's alone, out of every pod's reach), its
// path free at once, and the remover (trash.go: one goroutine from Start to
// Stop, one entry at a time, resuming what a crash or a stop left, each
// batch of names after the device manager has been idle for a moment, on
// a thread at nice 19 in the idle I/O class) empties it, taking over each directory a pod made unreadable (chown to the
// agent's user, which the chart's one capability, CHOWN, allows, then mode
// 0700), following no link, at any depth. A removal that fails is retried
// with backoff and logged once (and counted, kind remove-directory).
// A dir-group member can still put
// a link or a file at an allocation's path: a resync reports that path,
// counts it (memif_device_manager_errors_total, kind
// unusable-directory), leaves it as it is and goes on, so that it costs
// that allocation's pod its directory and not the agent its readiness.
// It does not touch the vswitch side
// (sibling handlers put that into the event's transaction) nor find pods
// itself, nor decide that a pod is gone: pod evidence comes in AddPod
// events, and liveness from the pod tracker (plugins/podmanager), the one
// owner of that decision, as DeletePod and LivePods events; the manager
// asks it (Options.LivePods) for a LivePods decision at every resync, and
// keeps no listing of its own; its one goroutine is the remover's.
//
// kubelet is the authority on which pod holds which device, and hands a
// device out only once it has freed it. So an Allocate naming devices an
// allocation holds is granted: the holder is taken over (released) in the
// same blocking event, its vswitch side removed in that event's transaction
// (dmapi.AllocateDevice.TakenOver), its directory in a follow-up; the
// holder pod's other allocations wait for the pod tracker's decision.
// Every takeover is logged with what became of the holder in the pod
// tracker's last LivePods decision (carried in the event before it is
// pushed) and counted in memif_device_manager_takeovers_total. Only
// unknown or repeated device IDs are refused.
//
// What is released, and when: a pod's allocations after its DeletePod, in
// ReleaseAllocation follow-ups that run once the DeletePod's transaction has
// removed the vswitch side (the socket directory outlives the interface
// listening on it); the allocations made for a kubelet call that then
// failed or that kubelet stopped waiting for (ReleaseAbandoned, one event
// for all of them); an allocation taken over; and, at each of the pod
// tracker's LivePods decisions (after every resync, and every
// podmanager.conf reconcile-period), what no live pod holds: unbound
// allocations older than unbound-grace-period at once, and for each pod
// not in the decision holding bound ones a DeletePod follow-up, which
// removes the vswitch side first. A DeletePod for a pod already released
// changes nothing. Once the node is handed over (HandOver), decisions
// release nothing: the successor owns the allocations.
//
// A directory under the socket root that no allocation explains (an
// Allocate a crash cut short, or an allocation lost with a damaged
// checkpoint, which a pod may still use) is never removed on the
// checkpoint's word: the first resync reports it; a collection recovers
// its allocation from a live container that mounts it (the annotations
// kubelet handed the runtime hold the socket paths and the secret), or
// removes it once a LivePods decision made with kubelet's pod-resources
// (LivePods.KubeletDevices) shows no pod holding its device nor mounting
// it.
// A damaged checkpoint loses only what the damage covers; every loss is
// logged with its count and counted.
//
// kubelet's Allocate calls come through the manager's
// deviceplugin.Allocator (kubelet.go), which builds, pushes and awaits the
// AllocateDevice event. ResourceClaims (the DRA driver, plugins/dradriver)
// come through its dmapi.ClaimPreparer (claims.go) as PrepareClaim and
// UnprepareClaim events: one allocation per claim request from the
// claim devices (claim-device-count), made exactly as for Allocate and
// bound at once to the claim's pod; preparing again returns them. kubelet
// releases them with UnprepareClaim (a DeletePod follow-up, so the vswitch
// side goes first), also after its own restart, and so does the driver for
// a claim it prepared ahead of kubelet whose pod ended before kubelet
// asked; collection never releases a claim's allocation.
//
// The handler runs on the controller event loop; allocation state is
// behind the allocation package's lock, so the DeviceManagerAPI methods are
// safe from any goroutine. Every change is in the checkpoint before the
// event that made it returns: one checkpoint.Writer, used only on the
// event loop, appends each change to the journal. A claim's change is
// synced at once. kubelet's allocations, and every binding and release,
// are appended without a sync once the checkpoint is recorded whole in
// the current boot (reboot.go): only a node restart can lose them, and
// after one the startup resync restores from kubelet's device checkpoint
// (package kubeletcheckpoint), which holds every answer a container was
// given, what the checkpoint lost; the pod tracker binds again and
// collection releases again.
//
// Running it without the agent (tests, benchmarks, the kubelet harness):
//
//	cfg := config.Default()
//	cfg.PluginDir, cfg.SocketRoot, cfg.CheckpointPath = dir+"/dp", dir+"/memif", dir+"/cp.json"
//	cfg.DeviceInfoDir = dir + "/devinfo"
//	dm, err := manager.New(cfg, manager.Options{Log: logger})
//	if err != nil { ... }
//	loop, err := eventloop.New(eventloop.DefaultConfig(), eventloop.Deps{
//		Handlers: []controllerapi.EventHandler{dm}, Committer: committer})
//	if err != nil { ... }
//	loop.Start()                  // runs the startup resync: loads the checkpoint
//	if err := dm.Start(loop); err != nil { ... } // serves and registers with kubelet
//	defer loop.Close()
//	defer dm.Stop()
package manager
