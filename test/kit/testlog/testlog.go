package testlog

import (
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/contivpp/memif-agent/internal/logs"
)

// Logger writes, keeps or drops what the code under test logs. It is safe
// for concurrent use.
type Logger struct {
	// tb gets every line; nil: none is written.
	tb testing.TB
	// failOnError makes an error line fail tb's test.
	failOnError bool
	// record keeps the lines in lines, guarded by mu.
	record bool
	mu     sync.Mutex
	lines  []string
}

// New logs every line to tb's log.
func New(tb testing.TB) *Logger { return &Logger{tb: tb} }

// FailOnError logs every line to tb's log, and fails tb's test at an
// error line: for code that must log no error in the test.
func FailOnError(tb testing.TB) *Logger { return &Logger{tb: tb, failOnError: true} }

// Recording keeps every line but debug ones, as "LEVEL message", for Lines.
func Recording() *Logger { return &Logger{record: true} }

// Discard drops every line: for benchmarks, whose log nobody reads.
func Discard() *Logger { return &Logger{} }

// Lines returns the lines a Recording logger kept, in order.
func (l *Logger) Lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines)
}

func (l *Logger) write(level, line string) {
	if l.record && level != "DEBUG" {
		l.mu.Lock()
		l.lines = append(l.lines, level+" "+line)
		l.mu.Unlock()
	}
	if l.tb == nil {
		return
	}
	l.tb.Helper()
	if l.failOnError && level == "ERROR" {
		l.tb.Errorf("%s %s", level, line)
		return
	}
	l.tb.Logf("%s %s", level, line)
}

var _ logs.Logger = (*Logger)(nil)

// DebugS logs a debug message with key/value pairs, as internal/logs'
// Logger does; the line is logs.Line's (a secret redacted).
func (l *Logger) DebugS(msg string, keysAndValues ...any) {
	l.write("DEBUG", logs.Line(msg, nil, keysAndValues))
}

// InfoS logs an info message with key/value pairs.
func (l *Logger) InfoS(msg string, keysAndValues ...any) {
	l.write("INFO", logs.Line(msg, nil, keysAndValues))
}

// WarnS logs a warning with key/value pairs.
func (l *Logger) WarnS(msg string, keysAndValues ...any) {
	l.write("WARN", logs.Line(msg, nil, keysAndValues))
}

// ErrorS logs an error with key/value pairs.
func (l *Logger) ErrorS(err error, msg string, keysAndValues ...any) {
	l.write("ERROR", logs.Line(msg, err, keysAndValues))
}

// Writer passes what is written to it to tb's log, one log entry per
// write, its surrounding space trimmed: for a program's output.
func Writer(tb testing.TB) io.Writer { return writer{tb} }

type writer struct{ tb testing.TB }

func (w writer) Write(p []byte) (int, error) {
	w.tb.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
