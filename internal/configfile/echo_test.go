package configfile

import (
	"fmt"
	"strings"
	"testing"
)

// checkedName echoes its value in a problem, as the plugins' Validate do.
type checkedName struct {
	Name string `json:"name"`
}

func (c *checkedName) Validate() error {
	var problems Problems
	if strings.HasPrefix(c.Name, "x") {
		problems.Addf("name", "must not start with x, got %q", c.Name)
	}
	return problems.Err()
}

// TestDecodeErrorsCutEchoedInput: what an error repeats of a config
// file's content is cut, saying how much was left out, and so is the
// number of problems listed, so that a file near MaxFileSize does not
// become a log line of its size.
func TestDecodeErrorsCutEchoedInput(t *testing.T) {
	const size = 900_000 // under MaxFileSize
	long := strings.Repeat("x", size)
	var manyKeys strings.Builder
	for i := range 50_000 {
		fmt.Fprintf(&manyKeys, "k%d: 1\n", i)
	}
	cases := []struct {
		name    string
		content string
		cfg     any
		want    []string
	}{
		{"long unknown key", "? " + long + "\n: 1\n", &exampleConfig{}, []string{`config key "xxxx`, "(899900 more bytes)", "unknown key"}},
		{"long duration", "period: " + long + "\n", &exampleConfig{}, []string{`config key "period": want a duration such as "30s", got "xxx`, "(899900 more bytes)"}},
		{"long mode", "mode: \"" + strings.Repeat("7", size) + "\"\n", &exampleConfig{}, []string{`config key "mode": want quoted octal`, "(899900 more bytes)"}},
		{"long value a Validate echoes", "name: " + long + "\n", &checkedName{}, []string{`config key "name": must not start with x, got "xxx`, "more bytes)"}},
		{"many unknown keys", manyKeys.String(), &exampleConfig{}, []string{`config key "k0": unknown key`, "and 49980 more problems"}},
		{"long duplicate key", "? " + long + "\n: 1\n? " + long + "\n: 2\n", &exampleConfig{}, []string{"not valid YAML", "more bytes)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Decode([]byte(tc.content), tc.cfg)
			if err == nil {
				t.Fatal("Decode = nil, want an error")
			}
			if len(err.Error()) > 8<<10 {
				t.Errorf("Decode error is %d bytes long, want at most 8 KiB; it starts %.300q", len(err.Error()), err.Error())
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Decode error %.600q does not say %q", err.Error(), want)
				}
			}
		})
	}
}

func TestEcho(t *testing.T) {
	cases := []struct {
		name, value, want string
	}{
		{"short", "abc", `"abc"`},
		{"exactly the limit", strings.Repeat("a", maxEcho), `"` + strings.Repeat("a", maxEcho) + `"`},
		{"one over", strings.Repeat("a", maxEcho+1), `"` + strings.Repeat("a", maxEcho) + `"... (1 more byte)`},
		{"cut inside a character", strings.Repeat("a", maxEcho-1) + "é", `"` + strings.Repeat("a", maxEcho-1) + `"... (2 more bytes)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Echo(tc.value); got != tc.want {
				t.Errorf("Echo = %q, want %q", got, tc.want)
			}
		})
	}
}
