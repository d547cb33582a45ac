package configfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"sigs.k8s.io/yaml"
)

// Validator is a config that checks itself after decoding; Decode calls
// Validate when the config has it.
type Validator interface {
	Validate() error
}

// Load reads the YAML config file at path into cfg, a pointer to a struct
// holding the defaults. An empty path means there is no file (cn-infra's
// GetConfigName gives "" when the file does not exist), and cfg keeps its
// defaults. Only a regular file of at most MaxFileSize bytes is read
// (links to one are followed).
func Load(path string, cfg any) error {
	if path == "" {
		return nil
	}
	content, err := ReadFile(path)
	if err != nil {
		return err
	}
	if err := Decode(content, cfg); err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	return nil
}

// Decode reads YAML content over cfg, a pointer to a struct whose json tags
// name the keys, then validates it. Keys left out keep their value in cfg.
// Every unknown key and every value of the wrong type is reported, each as a
// *KeyError; an unknown key is refused so that a misspelt key is not
// silently ignored.
func Decode(content []byte, cfg any) error {
	fields, err := fieldsOf(cfg)
	if err != nil {
		return err
	}
	values, err := keyValues(content)
	if err != nil {
		return err
	}
	if err := fields.set(values); err != nil {
		return err
	}
	if validator, ok := cfg.(Validator); ok {
		return validator.Validate()
	}
	return nil
}

// keyValues converts YAML content to its top-level keys and their JSON
// values. Duplicate keys are refused: which one wins would be a guess.
func keyValues(content []byte) (map[string]json.RawMessage, error) {
	asJSON, err := yaml.YAMLToJSONStrict(content)
	if err != nil {
		return nil, fmt.Errorf("not valid YAML: %w", boundedError{err})
	}
	asJSON = bytes.TrimSpace(asJSON)
	if len(asJSON) == 0 || string(asJSON) == "null" {
		return nil, nil
	}
	var values map[string]json.RawMessage
	if err := json.Unmarshal(asJSON, &values); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return nil, fmt.Errorf("the file must be a map of keys to values, got %s", kindOf(typeErr.Value))
		}
		return nil, fmt.Errorf("the file must be a map of keys to values: %w", err)
	}
	return values, nil
}
