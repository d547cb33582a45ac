package memifv1

// DefaultSocketPath is where memif-agent serves this API unless its
// nodeapi.conf says otherwise, and where memifctl looks for it.
const DefaultSocketPath = "/var/run/memif-agent/api.sock"
