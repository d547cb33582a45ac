package memifspec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

const (
	// AnnotationKey is the pod annotation holding a JSON list of specs.
	AnnotationKey = "memif.contivpp.io/networks"
	// APIVersion and Kind identify a DRA opaque config holding a spec.
	APIVersion = "memif.contivpp.io/v1alpha1"
	Kind       = "MemifConfig"
	// MaxInputBytes bounds an annotation or an opaque config.
	MaxInputBytes = 16 << 10
	// MaxSpecs bounds how many specs an annotation lists.
	MaxSpecs = 64
)

// MemifConfig is the DRA opaque config: a spec with its type beside it.
type MemifConfig struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Spec
}

// DecodeAnnotation reads the value of the annotation AnnotationKey: a
// JSON list of specs, each checked (Spec.Check), no two naming one memif.
func DecodeAnnotation(value string) ([]Spec, error) {
	if len(value) > MaxInputBytes {
		return nil, refuse(ReasonMalformed, "", "the %s annotation is %d bytes; at most %d", AnnotationKey, len(value), MaxInputBytes)
	}
	decoder := json.NewDecoder(strings.NewReader(value))
	if err := expectDelim(decoder, '['); err != nil {
		return nil, refuse(ReasonMalformed, "", "the %s annotation must be a JSON list such as [{\"network\": \"red\"}]: %v", AnnotationKey, err)
	}
	var specs []Spec
	for decoder.More() {
		entry := len(specs) + 1
		if entry > MaxSpecs {
			return nil, refuse(ReasonMalformed, "", "the %s annotation lists more than %d memifs", AnnotationKey, MaxSpecs)
		}
		var raw json.RawMessage
		if err := decoder.Decode(&raw); err != nil {
			return nil, inEntry(entry, refuse(ReasonMalformed, "", "not valid JSON: %v", syntaxProblem(err)))
		}
		spec, err := decodeSpec(raw, nil)
		if err == nil {
			err = spec.check()
		}
		if err == nil {
			err = conflict(specs, spec)
		}
		if err != nil {
			return nil, inEntry(entry, err)
		}
		specs = append(specs, spec)
	}
	if err := expectEnd(decoder, ']'); err != nil {
		return nil, refuse(ReasonMalformed, "", "the %s annotation: %v", AnnotationKey, err)
	}
	return specs, nil
}

func conflict(specs []Spec, spec Spec) *Error {
	for i, other := range specs {
		if spec.conflicts(other) {
			return refuse(ReasonDuplicateMemif, "memif-id", "%s is also entry %d's (%s); give each memif of a container one entry", spec, i+1, other)
		}
	}
	return nil
}

func inEntry(entry int, err *Error) *Error {
	err.Entry = entry
	return err
}

// DecodeConfig reads a DRA claim's opaque config for this driver: a JSON
// MemifConfig.
func DecodeConfig(raw []byte) (Spec, error) {
	if len(raw) > MaxInputBytes {
		return Spec{}, refuse(ReasonMalformed, "", "the %s is %d bytes; at most %d", Kind, len(raw), MaxInputBytes)
	}
	var config MemifConfig
	spec, err := decodeSpec(raw, map[string]any{"apiVersion": &config.APIVersion, "kind": &config.Kind})
	switch {
	case err != nil:
		return Spec{}, err
	case config.APIVersion != APIVersion:
		return Spec{}, refuse(ReasonMalformed, "apiVersion", "want %s, got %s", APIVersion, quoted(config.APIVersion))
	case config.Kind != Kind:
		return Spec{}, refuse(ReasonMalformed, "kind", "want %s, got %s", Kind, quoted(config.Kind))
	}
	if err := spec.Check(); err != nil {
		return Spec{}, err
	}
	return spec, nil
}

// decodeSpec reads one JSON object into a spec, with extra fields besides
// the spec's.
func decodeSpec(raw []byte, extra map[string]any) (Spec, *Error) {
	var s Spec
	fields := map[string]any{
		"network": &s.Network, "container": &s.Container, "memif-id": &s.MemifID, "mode": &s.Mode,
		"queues": &s.Queues, "ring-size": &s.RingSize, "buffer-size": &s.BufferSize, "rx-mode": &s.RxMode,
		"mtu": &s.MTU, "ips": &s.IPs, "mac": &s.MAC,
	}
	maps.Copy(fields, extra)
	if err := decodeObject(raw, fields); err != nil {
		return Spec{}, err
	}
	if len(s.IPs) == 0 {
		// "ips": [] asks for nothing, as leaving it out does.
		s.IPs = nil
	}
	return s, nil
}

// decodeObject decodes a JSON object into fields, by exact field name:
// an unknown or repeated field is refused, as is anything after the
// object.
func decodeObject(raw []byte, fields map[string]any) *Error {
	decoder := json.NewDecoder(bytes.NewReader(raw))
	if err := expectDelim(decoder, '{'); err != nil {
		return refuse(ReasonMalformed, "", "want a JSON object such as {\"network\": \"red\"}: %v", err)
	}
	seen := map[string]bool{}
	for decoder.More() {
		token, err := decoder.Token()
		if err != nil {
			return refuse(ReasonMalformed, "", "not valid JSON: %v", syntaxProblem(err))
		}
		key, _ := token.(string)
		field, known := fields[key]
		switch {
		case !known:
			return refuse(ReasonMalformed, "", "unknown field %s; the fields are %s", quoted(key), strings.Join(slices.Sorted(maps.Keys(fields)), ", "))
		case seen[key]:
			return refuse(ReasonMalformed, key, "given twice")
		}
		seen[key] = true
		var value json.RawMessage
		if err := decoder.Decode(&value); err != nil {
			return refuse(ReasonMalformed, key, "not valid JSON: %v", syntaxProblem(err))
		}
		if err := json.Unmarshal(value, field); err != nil {
			return &Error{Reason: ReasonMalformed, Field: key, Detail: fmt.Sprintf("want %s, got %s", wanted(field), quoted(string(value))), Err: err}
		}
	}
	return expectEnd(decoder, '}')
}

// expectDelim reads the opening delimiter want.
func expectDelim(decoder *json.Decoder, want json.Delim) error {
	token, err := decoder.Token()
	if err != nil {
		return errors.New(syntaxProblem(err))
	}
	if token != want {
		return fmt.Errorf("it starts with %s", describe(token))
	}
	return nil
}

// expectEnd reads the closing delimiter want and the end of the input.
func expectEnd(decoder *json.Decoder, want json.Delim) *Error {
	token, err := decoder.Token()
	if err != nil || token != want {
		return refuse(ReasonMalformed, "", "not valid JSON: %s", syntaxProblem(err))
	}
	if _, err := decoder.Token(); err != io.EOF {
		return refuse(ReasonMalformed, "", "data after the end of the JSON value")
	}
	return nil
}

// syntaxProblem words a decoding error without repeating the input: a
// syntax error quotes at most a character of it, and a type error, such
// as a number too large for the decoder, would repeat the whole value.
func syntaxProblem(err error) string {
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case err == nil:
		return "unexpected token"
	case errors.As(err, &syntaxErr):
		return fmt.Sprintf("%v at byte %d", syntaxErr, syntaxErr.Offset)
	case errors.As(err, &typeErr):
		return fmt.Sprintf("a value out of range at byte %d", typeErr.Offset)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "it ends too early"
	}
	return quoted(err.Error())
}

func describe(token json.Token) string {
	switch t := token.(type) {
	case json.Delim:
		return string(t)
	case string:
		return "a string"
	case nil:
		return "null"
	case bool:
		return "true or false"
	}
	return "a number"
}

// wanted names the JSON value a field takes.
func wanted(field any) string {
	switch field.(type) {
	case *uint32:
		return "a whole number from 0 to 4294967295"
	case *[]string:
		return "a list of strings"
	}
	return "a string"
}
