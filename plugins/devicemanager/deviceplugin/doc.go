// Package deviceplugin is the kubelet-facing gRPC layer of the device
// manager: a v1beta1 device plugin server on a Unix socket in kubelet's
// device-plugin directory, its registration with kubelet, and re-serving and
// re-registering whenever kubelet restarts.
//
// It owns the socket, the registration and the device list it advertises.
// It holds no allocation state and knows no event loop: it is a gRPC
// adapter over an Allocator (allocator.go), which the device manager
// implements, asked once per container request; a failure becomes a gRPC
// error whose code says what kind of failure it was (WithCode). A call no
// allocation could grant whole (more container requests than devices,
// one device in two container requests) is refused before the Allocator
// is asked; the allocations of a call that fails after some were answered
// are handed back in one Abandon call. It imports neither the controller
// nor the device manager (imports_test.go), so tests and the kubelet
// end-to-end harness start it with New over any Allocator.
//
// Lifecycle: Start creates the plugin directory if needed, serves, registers
// and watches the directory with fsnotify. kubelet wipes the directory when
// it restarts. Every directory event, and the retry timer (exponential
// backoff while kubelet is absent or refuses), makes the supervisor look at
// the directory as it is now: if our socket is not the one it serves, it
// serves again; it registers the pair of sockets (kubelet's, ours) once, in
// a goroutine of its own, and cancels that registration as soon as either
// socket is replaced. kubelet's Register handler dials our socket back and
// waits for it, so a registration must never outlive our socket. Stale or
// reordered events cost nothing: a pair already registered is not
// registered again.
//
// kubelet must not get a second registration for our socket while it
// holds the endpoint of the first: kubelet refuses it as "already
// connected" and, in refusing, forgets its client of the first while it
// keeps the endpoint; once that stream ends, kubelet refuses every
// registration on our socket path until kubelet restarts. Three rules
// keep the supervisor from sending one. A Register call reaches only the
// kubelet socket it was made for: a killed kubelet leaves its socket
// behind, and a call that retried its connection to it would reach the
// restarted kubelet, which then also gets the call made for its own
// socket. kubelet opening ListAndWatch on a server we have not seen
// registered is its answer, as good as the Register call's own, which may
// never come (the call ran out of time, or was cancelled after kubelet
// took it). And a socket is known by its device, inode and modification
// time, which a chmod, chown or relabel leaves as they are. Two windows
// stay open: a call whose answer was lost and whose ListAndWatch has not
// arrived when the retry goes out (the retry waits MinBackoff first), and
// a registration after someone else removed our socket while kubelet
// kept running, if it reaches kubelet before kubelet has seen the old
// server's stream end.
//
// Stop ends every stream (ListAndWatch returns) and removes the socket.
package deviceplugin
