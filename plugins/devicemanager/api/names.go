package api

// Names a container sees. They are part of the contract with pods and with
// the vswitch side, so they are constants, not configuration.
const (
	// DefaultResourceName is the extended resource pods request.
	DefaultResourceName = "contivpp.io/memif"

	// EnvMemifSocket is the container path of the memif socket.
	EnvMemifSocket = "MEMIF_SOCKET"
	// EnvMemifSecret is the memif shared secret.
	EnvMemifSecret = "MEMIF_SECRET"

	// AnnotationSocketHost is the host path of the memif socket.
	AnnotationSocketHost = "io.contivpp.memif.socket.host"
	// AnnotationSocketContainer is the container path of the memif socket.
	AnnotationSocketContainer = "io.contivpp.memif.socket.container"
	// AnnotationSecret is the memif shared secret.
	AnnotationSecret = "io.contivpp.memif.secret"
)
