// Package memifv1 is the generated Go code of the node-local API that
// memif-agent serves on its Unix socket (memif.proto), and the socket's
// default path (socket.go). Only memif.proto and socket.go are edited by
// hand; regenerate the rest with scripts/generate.sh.
package memifv1
