// Package securedir works inside a directory that only the agent may
// change, through the directory's file descriptor, so that no path the
// agent follows can be redirected by a symbolic link another user planted.
//
// Open refuses a directory that is a symbolic link, is not owned by the
// agent's user, or is writable by others (or by its group, unless that
// group is the one configured for it), naming the path, owner and mode; a
// directory Open creates gets exactly the requested mode. Every operation
// under it then uses openat, mkdirat, unlinkat and renameat on that
// descriptor with O_NOFOLLOW, and changes modes and owners through a
// descriptor of the file itself: nothing follows a link at the last path
// element, and nothing but single names are accepted below the directory.
//
// OpenDir opens a directory below an open one without Open's ownership
// check, for a directory the agent shares with others (an allocation's
// directory, which its pod writes in too): operations under it still
// follow no link.
//
// ReplaceFile is the one atomic and durable replace of a file (a file
// from CreateTemp, fsync, rename, fsync of the directory): the
// checkpoint, memif.json and the networks' state files are written
// through it. RemoveTemps removes, at a writer's start, the temporary
// files a replace killed before its rename left.
//
// Removal is for trees others may still be changing: RemoveSmall removes
// a link, a file or a directory of a few files in a bounded number of
// calls; MoveInto renames an entry into another directory in one call;
// RemoveAll removes a tree batch by batch, never following a link, makes
// each directory it enters the agent's user's (mode 0700: with CAP_CHOWN
// alone, a pod's mode-000 or sticky directory is removed), holds at most
// maxRemoveDepth directories open (deeper ones are moved up for a later
// call), and stops with its context. PrivateDir opens a directory of the
// agent's alone (0700) below an open one.
//
// It owns no directory: the device manager uses it for the socket root and
// the checkpoint's directory.
package securedir
