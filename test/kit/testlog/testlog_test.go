package testlog_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/contivpp/memif-agent/test/kit/testlog"
)

func TestRecordingKeepsEveryLineButDebug(t *testing.T) {
	cases := []struct {
		name string
		log  func(*testlog.Logger)
		want []string
	}{
		{"debug dropped", func(l *testlog.Logger) { l.DebugS("y") }, nil},
		{"structured", func(l *testlog.Logger) { l.WarnS("pod gone", "pod", "default/web", "uid", 7) },
			[]string{`WARN pod gone pod="default/web" uid="7"`}},
		{"structured error", func(l *testlog.Logger) { l.ErrorS(errors.New("refused"), "dial", "socket", "/s") },
			[]string{`ERROR dial err="refused" socket="/s"`}},
		{"secret redacted", func(l *testlog.Logger) { l.InfoS("memif", "secret", "s3cr3t") },
			[]string{`INFO memif secret="(redacted)"`}},
		{"value without key", func(l *testlog.Logger) { l.InfoS("odd", "key") }, []string{`INFO odd !BADKEY="key"`}},
		{"in order", func(l *testlog.Logger) { l.ErrorS(nil, "a"); l.WarnS("b") }, []string{"ERROR a", "WARN b"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			log := testlog.Recording()
			tc.log(log)
			if got := log.Lines(); !slices.Equal(got, tc.want) {
				t.Errorf("lines = %q, want %q", got, tc.want)
			}
		})
	}
}
