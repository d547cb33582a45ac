package nodeapi

import (
	"fmt"
	"path/filepath"

	"github.com/contivpp/memif-agent/internal/configfile"
	"github.com/contivpp/memif-agent/plugins/nodeapi/server"
)

// Config is the content of nodeapi.conf; every field is optional.
type Config struct {
	// SocketPath is the API's Unix socket.
	SocketPath string `json:"socket-path"`
	// SocketMode is the socket's permission bits in octal, for example
	// "0600" (root only, the default) or "0660" (root and the socket's group).
	SocketMode configfile.FileMode `json:"socket-mode"`
	// SocketGroup is the group of the socket and of the directory the
	// agent creates for it, by name or numeric ID; empty keeps the agent's
	// group. With socket-mode "0660" its members may use the API.
	SocketGroup string `json:"socket-group"`
	// WatchBuffer is how many changes a watcher may lag behind before it is
	// dropped.
	WatchBuffer int `json:"watch-buffer"`
}

// serverConfig validates c and returns the server's configuration. The
// decoder has refused a socket-mode beyond the permission bits already;
// server.Start looks the socket-group up, once.
func (c Config) serverConfig() (server.Config, error) {
	if c.SocketPath != "" && !filepath.IsAbs(c.SocketPath) {
		return server.Config{}, fmt.Errorf("invalid socket-path %q in nodeapi config: want an absolute path", c.SocketPath)
	}
	// The API hands out every memif secret: a group may be let in, the
	// world may not.
	if c.SocketMode&0o007 != 0 {
		return server.Config{}, fmt.Errorf("invalid socket-mode %s in nodeapi config: it lets every local user read memif secrets; use \"0660\" with socket-group", c.SocketMode)
	}
	if c.WatchBuffer < 0 {
		return server.Config{}, fmt.Errorf("invalid watch-buffer %d in nodeapi config: want a positive number, or 0 for the default", c.WatchBuffer)
	}
	return server.Config{SocketPath: c.SocketPath, SocketMode: c.SocketMode.Perm(), SocketGroup: c.SocketGroup}, nil
}
