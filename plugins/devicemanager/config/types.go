package config

import (
	"encoding/json"
	"fmt"
)

// Group is a group name or numeric group ID; the config may write an ID
// as a bare number.
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
