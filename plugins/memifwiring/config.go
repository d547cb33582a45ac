package memifwiring

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/ghodss/yaml"

	"github.com/contivpp/memif-agent/plugins/memifwiring/wiring"
)

// loadConfig reads the config file at path; "" means no file and gives the
// defaults (everything left to the vswitch).
func loadConfig(path string) (wiring.Config, error) {
	if path == "" {
		return wiring.Config{}, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return wiring.Config{}, fmt.Errorf("read memifwiring config: %w", err)
	}
	cfg, err := parseConfig(data)
	if err != nil {
		return wiring.Config{}, fmt.Errorf("memifwiring config %s: %w", path, err)
	}
	return cfg, nil
}

// parseConfig reads YAML strictly: a misspelt key is an error rather than a
// silently ignored setting.
func parseConfig(data []byte) (wiring.Config, error) {
	var cfg wiring.Config
	asJSON, err := yaml.YAMLToJSON(data)
	if err != nil {
		return cfg, fmt.Errorf("parse YAML: %w", err)
	}
	if string(bytes.TrimSpace(asJSON)) == "null" {
		return cfg, nil
	}
	decoder := json.NewDecoder(bytes.NewReader(asJSON))
	decoder.DisallowUnknownFields()
	if err := decoder.Decode(&cfg); err != nil {
		return cfg, fmt.Errorf("decode: %w", err)
	}
	return cfg, cfg.Validate()
}
