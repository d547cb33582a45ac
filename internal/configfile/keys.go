package configfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// KeyError is an invalid value of one config key, or a key the config does
// not have.
type KeyError struct {
	// Key is the key as written in the config file.
	Key string
	// Reason says what is wrong and what is wanted.
	Reason string
	// Err is the decoding error behind Reason, if any.
	Err error
}

// Error implements error. The key and the reason are cut (Echo) when long:
// they may repeat the file's content.
func (e *KeyError) Error() string {
	return fmt.Sprintf("config key %s: %s", Echo(e.Key), cutText(e.Reason, maxReason))
}

// Unwrap returns the decoding error behind the problem, if any.
func (e *KeyError) Unwrap() error { return e.Err }

// fieldSet maps every key of a config to a pointer to the field it sets.
// A field without a json tag is keyed by its lower-case name and matches a
// key in any case, as encoding/json matches it: the framework's configs
// (cn-infra's http.conf) have such fields, documented as "endpoint".
type fieldSet struct {
	pointers map[string]any
	caseless map[string]bool
}

// fieldsOf lists the keys of cfg, a pointer to a struct, by their json tags.
func fieldsOf(cfg any) (fieldSet, error) {
	value := reflect.ValueOf(cfg)
	if value.Kind() != reflect.Pointer || value.IsNil() || value.Elem().Kind() != reflect.Struct {
		return fieldSet{}, fmt.Errorf("decode config: want a pointer to a struct, got %T", cfg)
	}
	config := value.Elem()
	fields := fieldSet{pointers: map[string]any{}, caseless: map[string]bool{}}
	for i := range config.NumField() {
		field := config.Type().Field(i)
		key, _, _ := strings.Cut(field.Tag.Get("json"), ",")
		if !field.IsExported() || key == "-" {
			continue
		}
		if key == "" {
			key = strings.ToLower(field.Name)
			fields.caseless[key] = true
		}
		fields.pointers[key] = config.Field(i).Addr().Interface()
	}
	return fields, nil
}

// lookup returns the field key sets.
func (f fieldSet) lookup(key string) (any, bool) {
	if field, known := f.pointers[key]; known {
		return field, true
	}
	if lower := strings.ToLower(key); f.caseless[lower] {
		return f.pointers[lower], true
	}
	return nil, false
}

// set decodes each key on its own, so that a value of the wrong type is
// reported with its key; unknown keys are refused.
func (f fieldSet) set(values map[string]json.RawMessage) error {
	var problems []error
	for _, key := range slices.Sorted(maps.Keys(values)) {
		field, known := f.lookup(key)
		if !known {
			problems = append(problems, &KeyError{Key: key,
				Reason: "unknown key; the keys are " + strings.Join(slices.Sorted(maps.Keys(f.pointers)), ", ")})
			continue
		}
		if err := decodeValue(values[key], field); err != nil {
			problems = append(problems, &KeyError{Key: key, Reason: valueProblem(err), Err: err})
		}
	}
	return joinBounded(problems)
}

// decodeValue decodes one key's value, refusing unknown keys in nested maps
// decoded into structs too.
func decodeValue(value json.RawMessage, field any) error {
	decoder := json.NewDecoder(bytes.NewReader(value))
	decoder.DisallowUnknownFields()
	return decoder.Decode(field)
}

// valueProblem words a decoding error without Go type names where it can.
func valueProblem(err error) string {
	var typeErr *json.UnmarshalTypeError
	if !errors.As(err, &typeErr) || typeErr.Type == nil {
		return err.Error()
	}
	problem := fmt.Sprintf("want %s, got %s", wanted(typeErr.Type), kindOf(typeErr.Value))
	if typeErr.Field != "" {
		problem += fmt.Sprintf(" at %q", typeErr.Field)
	}
	return problem
}

// wanted names the kind of value a Go type takes, in config-file words.
func wanted(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Uint8, reflect.Uint16, reflect.Uint32:
		return fmt.Sprintf("a whole number from 0 to %d", uint64(1)<<t.Bits()-1)
	case reflect.Uint, reflect.Uint64:
		return "a whole number from 0"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a map of keys to values"
	}
	return "a " + t.String()
}

// kindOf names the kind of JSON value encoding/json reports in
// UnmarshalTypeError.Value ("string", "number 1.5", "array"...).
func kindOf(value string) string {
	if number, found := strings.CutPrefix(value, "number "); found {
		return cutText(number, maxEcho)
	}
	switch value {
	case "array":
		return "a list"
	case "object":
		return "a map"
	case "bool":
		return "true or false"
	}
	return "a " + value
}
