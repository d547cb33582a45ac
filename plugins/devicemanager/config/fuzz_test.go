package config

import "testing"

// FuzzParse checks that no config file content panics Parse, and that what
// Parse accepts is valid.
func FuzzParse(f *testing.F) {
	f.Add([]byte("device-count: 4\ndir-mode: \"0750\"\n"))
	f.Fuzz(func(t *testing.T, content []byte) {
		cfg, err := Parse(content)
		if err != nil {
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("Parse accepted %q but Validate says %v", content, err)
		}
	})
}
