package config

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"
)

// DirMode is a directory permission written in the config as a quoted octal
// string ("0770"). A bare YAML number is refused: YAML reads 0770 as the
// decimal 504, and silently using either reading would surprise someone.
type DirMode os.FileMode

// Perm returns the mode as permission bits.
func (m DirMode) Perm() os.FileMode { return os.FileMode(m) }

// MarshalJSON writes the mode as an octal string.
func (m DirMode) MarshalJSON() ([]byte, error) {
	return json.Marshal(fmt.Sprintf("%04o", uint32(m)))
}

// UnmarshalJSON reads a quoted octal string such as "0770".
func (m *DirMode) UnmarshalJSON(data []byte) error {
	var text string
	if err := json.Unmarshal(data, &text); err != nil {
		return fmt.Errorf("must be a quoted octal string such as \"0770\", got %s", data)
	}
	value, err := strconv.ParseUint(text, 8, 32)
	if err != nil {
		return fmt.Errorf("must be a quoted octal string such as \"0770\", got %q", text)
	}
	*m = DirMode(value)
	return nil
}

// Duration is a time.Duration written in the config as "10m", "90s".
type Duration time.Duration

// String formats the duration like time.Duration.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a Go duration string.
func (d *Duration) UnmarshalJSON(data []byte) error {
	var text string
	if err := json.Unmarshal(data, &text); err != nil {
		return fmt.Errorf("must be a duration string such as \"10m\", got %s", data)
	}
	value, err := time.ParseDuration(text)
	if err != nil {
		return fmt.Errorf("must be a duration string such as \"10m\", got %q", text)
	}
	*d = Duration(value)
	return nil
}

// Duration returns the value as a time.Duration.
func (d Duration) Duration() time.Duration { return time.Duration(d) }

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
