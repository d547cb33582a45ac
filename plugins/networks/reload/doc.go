// Package reload owns watching one config file and handing each new valid
// version of it to its user, live: a Kubernetes ConfigMap update replaces
// the mounted file through a symbolic link swap (the ..data link in the
// mount directory is renamed over), which no watch on the file itself
// sees, so the Watcher watches the file's directory (fsnotify) and reads
// the file again after any change in it.
//
// Changes are debounced: the file is read once the directory has been
// quiet for Options.Debounce. It is read as every config file is
// (configfile.ReadFile): only a regular file of at most 1 MiB, opened
// without blocking, so that a FIFO is refused at once, at Start or later,
// and never hangs the Watcher or its Stop. The content is parsed by the
// caller's Parse; a version whose content is the same as the last one
// seen is ignored, a valid one is handed to Apply, an invalid or
// unreadable one is handed to Refuse and the last applied version stays
// in force. A version that goes back to the last seen valid content after
// a refusal is applied again, so that the user can clear its refusal.
//
// A file removed is refused once (an error matching fs.ErrNotExist),
// however often its directory changes while it is gone, and the last
// applied version stays; the file written again is a new version. With
// Options.MayBeMissing, the file may be missing at Start too, which then
// parses nil content; the file written later is applied.
//
// The Watcher's goroutine is its own; Stop ends it and waits for it.
// Apply and Refuse run on that goroutine, one at a time, and must not
// call Stop.
//
// It knows nothing of what the file holds: the networks plugin uses it
// for networks.conf with netconf.Decode as Parse. It lives under
// plugins/networks as that plugin's plain core and imports no framework.
package reload
