package testlog

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
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

// Debugf logs a debug line, as cn-infra's loggers do.
func (l *Logger) Debugf(format string, args ...any) { l.write("DEBUG", fmt.Sprintf(format, args...)) }

// Infof logs an info line.
func (l *Logger) Infof(format string, args ...any) { l.write("INFO", fmt.Sprintf(format, args...)) }

// Warnf logs a warning.
func (l *Logger) Warnf(format string, args ...any) { l.write("WARN", fmt.Sprintf(format, args...)) }

// Errorf logs an error.
func (l *Logger) Errorf(format string, args ...any) { l.write("ERROR", fmt.Sprintf(format, args...)) }

// DebugS logs a debug message with key/value pairs, as internal/logs'
// Logger does.
func (l *Logger) DebugS(msg string, keysAndValues ...any) {
	l.write("DEBUG", structured(msg, nil, keysAndValues))
}

// InfoS logs an info message with key/value pairs.
func (l *Logger) InfoS(msg string, keysAndValues ...any) {
	l.write("INFO", structured(msg, nil, keysAndValues))
}

// WarnS logs a warning with key/value pairs.
func (l *Logger) WarnS(msg string, keysAndValues ...any) {
	l.write("WARN", structured(msg, nil, keysAndValues))
}

// ErrorS logs an error with key/value pairs.
func (l *Logger) ErrorS(err error, msg string, keysAndValues ...any) {
	l.write("ERROR", structured(msg, err, keysAndValues))
}

// structured is msg followed by err and each key=value pair; a value
// without its key is printed alone.
func structured(msg string, err error, keysAndValues []any) string {
	var line strings.Builder
	line.WriteString(msg)
	if err != nil {
		fmt.Fprintf(&line, " err=%q", err.Error())
	}
	for i := 0; i < len(keysAndValues); i += 2 {
		if i+1 == len(keysAndValues) {
			fmt.Fprintf(&line, " %v", keysAndValues[i])
			break
		}
		fmt.Fprintf(&line, " %v=%v", keysAndValues[i], keysAndValues[i+1])
	}
	return line.String()
}

// Writer passes what is written to it to tb's log, one log entry per
// write, its surrounding space trimmed: for a program's output.
func Writer(tb testing.TB) io.Writer { return writer{tb} }

type writer struct{ tb testing.TB }

func (w writer) Write(p []byte) (int, error) {
	w.tb.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
