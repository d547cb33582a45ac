package logs

import (
	"errors"
	"reflect"
	"testing"
)

func TestPairs(t *testing.T) {
	for _, tc := range []struct {
		name          string
		err           error
		keysAndValues []any
		wantLine      string
		wantFields    map[string]any
	}{
		{
			name:          "pairs in order",
			keysAndValues: []any{"pod", "default/a", "memifs", 2},
			wantLine:      `msg pod="default/a" memifs="2"`,
			wantFields:    map[string]any{"pod": "default/a", "memifs": 2},
		},
		{
			name:          "error first",
			err:           errors.New("no such file"),
			keysAndValues: []any{"path", "/run/x"},
			wantLine:      `msg err="no such file" path="/run/x"`,
			wantFields:    map[string]any{"err": "no such file", "path": "/run/x"},
		},
		{
			name:          "a secret is never written",
			keysAndValues: []any{"memifSecret", "s3cr3t", "Secret", "other"},
			wantLine:      `msg memifSecret="(redacted)" Secret="(redacted)"`,
			wantFields:    map[string]any{"memifSecret": redacted, "Secret": redacted},
		},
		{
			name:          "a value without a key",
			keysAndValues: []any{"pod", "a", "dangling"},
			wantLine:      `msg pod="a" !BADKEY="dangling"`,
			wantFields:    map[string]any{"pod": "a", badKey: "dangling"},
		},
		{
			name:          "a key that is not a string",
			keysAndValues: []any{42, "pod", "a"},
			wantLine:      `msg !BADKEY="42" pod="a"`,
			wantFields:    map[string]any{badKey: 42, "pod": "a"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Line("msg", tc.err, tc.keysAndValues); got != tc.wantLine {
				t.Errorf("Line = %s, want %s", got, tc.wantLine)
			}
			if got := Fields(tc.err, tc.keysAndValues); !reflect.DeepEqual(got, tc.wantFields) {
				t.Errorf("Fields = %v, want %v", got, tc.wantFields)
			}
		})
	}
}
