package controller

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/ghodss/yaml"

	"github.com/contivpp/memif-agent/plugins/controller/eventloop"
)

// loadConfig reads the controller config file at path; "" means no file and
// gives the defaults.
func loadConfig(path string) (eventloop.Config, error) {
	if path == "" {
		return eventloop.DefaultConfig(), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return eventloop.Config{}, fmt.Errorf("read controller config: %w", err)
	}
	cfg, err := parseConfig(data)
	if err != nil {
		return eventloop.Config{}, fmt.Errorf("controller config %s: %w", path, err)
	}
	return cfg, nil
}

// parseConfig reads YAML over the defaults. An unknown key is an error, so
// that a misspelt key is not silently ignored.
func parseConfig(data []byte) (eventloop.Config, error) {
	cfg := eventloop.DefaultConfig()
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
