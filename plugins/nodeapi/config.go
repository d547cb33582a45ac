package nodeapi

import (
	"path/filepath"

	memifv1 "github.com/contivpp/memif-agent/api/memif/v1"
	"github.com/contivpp/memif-agent/internal/configfile"
	"github.com/contivpp/memif-agent/internal/unixgroup"
	"github.com/contivpp/memif-agent/plugins/nodeapi/server"
)

// Config is the content of nodeapi.conf; every key is optional.
type Config struct {
	// SocketPath is the API's Unix socket; empty means the default.
	SocketPath string `json:"socket-path"`
	// SocketMode is the socket's permission bits in octal, for example
	// "0600" (root only, the default) or "0660" (root and the socket's
	// group); empty means the default.
	SocketMode configfile.FileMode `json:"socket-mode"`
	// SocketGroup is the group of the socket and of the directory the
	// agent creates for it, by name or numeric ID; empty keeps the agent's
	// group. With socket-mode "0660" its members may use the API.
	SocketGroup unixgroup.Group `json:"socket-group"`
	// WatchBuffer is how many changes a watcher may lag behind before it is
	// ended; 0 means the default.
	WatchBuffer int `json:"watch-buffer"`
	// MaxWatchers is how many watch streams may be open at once; 0 means
	// the default.
	MaxWatchers int `json:"max-watchers"`
	// MaxWatchersPerUser is how many of them one user (by the client's
	// user ID) may hold; 0 means the default.
	MaxWatchersPerUser int `json:"max-watchers-per-user"`
}

// DefaultConfig returns the defaults nodeapi.conf documents.
func DefaultConfig() Config {
	return Config{
		SocketPath:         memifv1.DefaultSocketPath,
		SocketMode:         configfile.FileMode(server.DefaultSocketMode),
		WatchBuffer:        server.DefaultWatchBuffer,
		MaxWatchers:        server.DefaultMaxWatchers,
		MaxWatchersPerUser: server.DefaultMaxWatchersPerUser,
	}
}

// Validate checks every key and returns all problems found, each a
// *configfile.KeyError. The decoder has refused a socket-mode beyond the
// permission bits already; server.Start looks the socket-group up, once.
func (c Config) Validate() error {
	var problems configfile.Problems
	if c.SocketPath != "" && !filepath.IsAbs(c.SocketPath) {
		problems.Addf("socket-path", "must be an absolute path, got %q", c.SocketPath)
	}
	// The API hands out every memif secret: a group may be let in, the
	// world may not.
	if c.SocketMode&0o007 != 0 {
		problems.Addf("socket-mode", "must not let others connect, got %s: it lets every local user read memif secrets; use \"0660\" with socket-group", c.SocketMode)
	}
	problems.Check("socket-group", c.SocketGroup.CheckSyntax())
	if c.WatchBuffer < 0 {
		problems.Addf("watch-buffer", "must be a positive number, or 0 for the default, got %d", c.WatchBuffer)
	}
	if c.MaxWatchers < 0 {
		problems.Addf("max-watchers", "must be a positive number, or 0 for the default, got %d", c.MaxWatchers)
	}
	if c.MaxWatchersPerUser < 0 {
		problems.Addf("max-watchers-per-user", "must be a positive number, or 0 for the default, got %d", c.MaxWatchersPerUser)
	}
	return problems.Err()
}

// watchLimits returns the limits of the watchers.
func (c Config) watchLimits() server.WatchLimits {
	return server.WatchLimits{Buffer: c.WatchBuffer, Max: c.MaxWatchers, MaxPerUser: c.MaxWatchersPerUser}
}

// serverConfig returns the server's configuration.
func (c Config) serverConfig() server.Config {
	return server.Config{SocketPath: c.SocketPath, SocketMode: c.SocketMode.Perm(), SocketGroup: string(c.SocketGroup)}
}
