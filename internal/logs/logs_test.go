package logs

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/ligato/cn-infra/logging"
	cnlogrus "github.com/ligato/cn-infra/logging/logrus"
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

// A line through FromPlugin says where its caller logged it, as
// cn-infra's own methods do, whether the method is called or taken as a
// value.
func TestFromPluginNamesTheCaller(t *testing.T) {
	var out bytes.Buffer
	plugin := cnlogrus.NewLogger("logs-test")
	plugin.SetOutput(&out)
	plugin.SetLevel(logging.DebugLevel)
	log := FromPlugin(plugin)
	_, file, _, _ := runtime.Caller(0)
	// Each case logs, and returns the line it logged on: the one before
	// it reads its own.
	for _, tc := range []struct {
		name    string
		logLine func() int
		want    []string
	}{
		{"called", func() int {
			log.InfoS("memif link up", "memif", "m0", "memifSecret", "s3cr3t")
			_, _, at, _ := runtime.Caller(0)
			return at - 1
		},
			[]string{`level=info`, `msg="memif link up"`, `memif=m0`, `memifSecret="(redacted)"`}},
		{"method value", func() int {
			logAt := log.WarnS
			logAt("memif link down", "memif", "m1")
			_, _, at, _ := runtime.Caller(0)
			return at - 1
		},
			[]string{`level=warning`, `msg="memif link down"`, `memif=m1`}},
		{"debug", func() int {
			log.DebugS("event processed", "event", "AddPod")
			_, _, at, _ := runtime.Caller(0)
			return at - 1
		},
			[]string{`level=debug`, `msg="event processed"`, `event=AddPod`}},
		{"error", func() int {
			log.ErrorS(errors.New("refused"), "dial failed", "socket", "/s")
			_, _, at, _ := runtime.Caller(0)
			return at - 1
		},
			[]string{`level=error`, `msg="dial failed"`, `err=refused`, `socket=/s`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out.Reset()
			at := tc.logLine()
			got := out.String()
			want := append(tc.want, fmt.Sprintf(`loc="%s/%s(%d)"`, filepath.Base(filepath.Dir(file)), filepath.Base(file), at))
			for _, part := range want {
				if !strings.Contains(got, part) {
					t.Errorf("line %q lacks %s", got, part)
				}
			}
			if strings.Contains(got, "s3cr3t") {
				t.Errorf("line %q holds a secret", got)
			}
		})
	}
}

// Above debug level DebugS writes nothing.
func TestDebugSAboveDebugLevel(t *testing.T) {
	var out bytes.Buffer
	plugin := cnlogrus.NewLogger("logs-test-info")
	plugin.SetOutput(&out)
	plugin.SetLevel(logging.InfoLevel)
	FromPlugin(plugin).DebugS("event processed", "event", "AddPod")
	if out.Len() > 0 {
		t.Errorf("at info level DebugS wrote %q", out.String())
	}
}
