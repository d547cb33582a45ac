// Package configfile owns reading a plugin's YAML config file strictly: the
// file is decoded key by key over the defaults the caller passes in, an
// unknown key or a value of the wrong type is a *KeyError naming the key,
// and the config's own Validate, when it has one, runs last. It also owns
// the value types config files share: Duration ("30s") and FileMode
// ("0660").
//
// Every plugin's config follows one template: the defaults are the config
// type's (a DefaultConfig function, or the zero value when that is the
// default), and Validate checks every key with a Problems, so that all bad
// keys are reported at once, each as a *KeyError in the same words:
// config key "k": must be ..., got .... The agent (cmd/memif-agent) finds
// each plugin's file and decodes the framework's own config files (http,
// logs, kvscheduler) with this package too.
//
// A config file is read only when it is a regular file (links to one are
// followed; a FIFO, a device or a directory is refused without blocking)
// of at most MaxFileSize bytes. What an error repeats of the file is cut:
// a quoted value (Echo) to 100 bytes, a problem to 1 KiB, a list of
// problems to 20, each cut saying how much was left out, so that a huge
// value does not become a log line of its size.
//
// A plugin that watches its file live finds where it would be while it
// is missing through Locator, which File and the agent's own plugin
// configs implement.
//
// It does not know any plugin's keys or defaults, and it must not import
// cn-infra: plugins pass in the path their cn-infra config gives them.
//
// Example:
//
//	cfg := DefaultConfig()
//	if err := configfile.Load(p.Cfg.GetConfigName(), &cfg); err != nil {
//		return fmt.Errorf("my plugin: %w", err)
//	}
package configfile
