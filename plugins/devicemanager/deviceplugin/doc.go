// Package deviceplugin is the kubelet-facing gRPC layer of the device
// manager: a v1beta1 device plugin server on a Unix socket in kubelet's
// device-plugin directory, its registration with kubelet, and re-serving and
// re-registering whenever kubelet restarts.
//
// It owns the socket, the registration and the device list it advertises.
// It holds no allocation state: Allocate turns each container request into a
// blocking AllocateDevice event, pushes it into the controller event loop
// and answers with what the handlers filled in, or with a gRPC error whose
// code says what kind of failure it was. It imports no plugin framework, so
// tests and the kubelet end-to-end harness start it with New.
//
// Lifecycle: Start creates the plugin directory if needed, serves, registers
// (retrying with exponential backoff while kubelet is absent) and watches
// the directory with fsnotify. kubelet wipes the directory when it restarts:
// the removal of our socket makes the server re-serve at once, and the
// creation of kubelet's socket makes it register at once, without polling.
// Stop ends every stream (ListAndWatch returns) and removes the socket.
package deviceplugin
