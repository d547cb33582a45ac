package unixgroup

import (
	"fmt"
	"os/user"
	"strconv"
)

// None is the ID Lookup returns for no group: os.Chown and os.Lchown keep
// the group a file has.
const None = -1

// Lookup returns the ID of group, given by name or non-negative number;
// empty is None.
func Lookup(group string) (int, error) {
	if group == "" {
		return None, nil
	}
	if gid, err := strconv.Atoi(group); err == nil && gid >= 0 {
		return gid, nil
	}
	found, err := user.LookupGroup(group)
	if err != nil {
		return 0, fmt.Errorf("group %q not found on this host: %w", group, err)
	}
	gid, err := strconv.Atoi(found.Gid)
	if err != nil {
		return 0, fmt.Errorf("group %q has a non-numeric ID %q", group, found.Gid)
	}
	return gid, nil
}
