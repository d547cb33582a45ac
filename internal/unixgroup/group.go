package unixgroup

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Group is a group as a config file gives it: a name or a numeric ID,
// quoted or a bare number; empty means none. Every config key that names a
// group uses it, so they all accept the same values.
type Group string

// UnmarshalJSON reads a string or a whole number.
func (g *Group) UnmarshalJSON(data []byte) error {
	var number json.Number
	if err := json.Unmarshal(data, &number); err == nil {
		*g = Group(number.String())
		return nil
	}
	var text string
	if err := json.Unmarshal(data, &text); err != nil {
		return fmt.Errorf("must be a group name or a numeric ID, got %s", data)
	}
	*g = Group(text)
	return nil
}

// CheckSyntax says what is wrong with g as written, without looking it up:
// "" when g is empty, a non-negative ID or a valid group name.
func (g Group) CheckSyntax() string {
	if g == "" {
		return ""
	}
	if gid, err := strconv.Atoi(string(g)); err == nil {
		if gid < 0 {
			return fmt.Sprintf("must be a group name or a non-negative ID, got %q", g)
		}
		return ""
	}
	if !isGroupName(string(g)) {
		return fmt.Sprintf("must be a group name or a numeric ID, got %q", g)
	}
	return ""
}

// Lookup returns the numeric ID of g, or None when g is empty.
func (g Group) Lookup() (int, error) { return Lookup(string(g)) }

// isGroupName follows the shadow-utils rule: a letter or '_' first, then
// letters, digits, '_', '-' or '.'.
func isGroupName(name string) bool {
	for i, r := range name {
		letter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_'
		if !letter && (i == 0 || !(r >= '0' && r <= '9' || r == '-' || r == '.')) {
			return false
		}
	}
	return len(name) <= 32
}
