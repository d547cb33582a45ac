package configfile

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"strconv"
	"time"
)

// Duration is a time.Duration written in a config file as a string such as
// "30s", "500ms" or "10m". A bare number is refused: it has no unit.
type Duration time.Duration

// Duration returns the value as a time.Duration.
func (d Duration) Duration() time.Duration { return time.Duration(d) }

// String formats the duration like time.Duration.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a Go duration string.
func (d *Duration) UnmarshalJSON(data []byte) error {
	const want = `want a duration such as "30s"`
	var text string
	if err := json.Unmarshal(data, &text); err != nil {
		return fmt.Errorf("%s, got %s", want, cutText(string(data), maxEcho))
	}
	value, err := time.ParseDuration(text)
	if err != nil {
		return fmt.Errorf("%s, got %s", want, Echo(text))
	}
	*d = Duration(value)
	return nil
}

// FileMode is permission bits written in a config file as a quoted octal
// string such as "0660". A bare YAML number is refused: YAML reads 0660 as
// the decimal 432, and silently using either reading would surprise someone.
// An empty string is 0, which a plugin may read as "its default".
type FileMode fs.FileMode

// Perm returns the mode as permission bits.
func (m FileMode) Perm() fs.FileMode { return fs.FileMode(m) }

// String writes the mode in octal, as a config file does.
func (m FileMode) String() string { return fmt.Sprintf("%04o", uint32(m)) }

// MarshalJSON writes the mode as an octal string.
func (m FileMode) MarshalJSON() ([]byte, error) { return json.Marshal(m.String()) }

// UnmarshalJSON reads a quoted octal string within 0777.
func (m *FileMode) UnmarshalJSON(data []byte) error {
	const want = `want quoted octal permission bits within 0777 such as "0660"`
	var text string
	if err := json.Unmarshal(data, &text); err != nil {
		return fmt.Errorf("%s, got %s", want, cutText(string(data), maxEcho))
	}
	if text == "" {
		*m = 0
		return nil
	}
	value, err := strconv.ParseUint(text, 8, 32)
	if err != nil || value > 0o777 {
		return fmt.Errorf("%s, got %s", want, Echo(text))
	}
	*m = FileMode(value)
	return nil
}
