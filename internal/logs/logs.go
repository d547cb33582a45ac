package logs

import (
	"fmt"
	"strings"

	"github.com/ligato/cn-infra/logging"
)

// Logger writes structured log lines. keysAndValues alternate: a string
// key, then its value. A value under a key that names a secret is never
// written.
type Logger interface {
	DebugS(msg string, keysAndValues ...any)
	InfoS(msg string, keysAndValues ...any)
	WarnS(msg string, keysAndValues ...any)
	ErrorS(err error, msg string, keysAndValues ...any)
}

// FromPlugin adapts a cn-infra logger, which every plugin has as its
// Log, to Logger: the pairs become logrus fields.
func FromPlugin(log logging.Logger) Logger { return pluginLogger{log} }

type pluginLogger struct{ log logging.Logger }

func (l pluginLogger) DebugS(msg string, kv ...any) {
	l.log.WithFields(Fields(nil, kv)).Debug(msg)
}

func (l pluginLogger) InfoS(msg string, kv ...any) {
	l.log.WithFields(Fields(nil, kv)).Info(msg)
}

func (l pluginLogger) WarnS(msg string, kv ...any) {
	l.log.WithFields(Fields(nil, kv)).Warn(msg)
}

func (l pluginLogger) ErrorS(err error, msg string, kv ...any) {
	l.log.WithFields(Fields(err, kv)).Error(msg)
}

// Discard drops every line: for a package given no logger.
func Discard() Logger { return discard{} }

type discard struct{}

func (discard) DebugS(string, ...any)        {}
func (discard) InfoS(string, ...any)         {}
func (discard) WarnS(string, ...any)         {}
func (discard) ErrorS(error, string, ...any) {}

// redacted replaces the value of a key naming a secret.
const redacted = "(redacted)"

// badKey is the key of a value that came without one, as klog names it.
const badKey = "!BADKEY"

// pair is one key and its value, as it will be written.
type pair struct {
	key   string
	value any
}

// pairs reads err and the alternating keys and values in order: err under
// "err", a key that is not a string or a value without a key under
// badKey, and the value of any key containing "secret" redacted.
func pairs(err error, keysAndValues []any) []pair {
	read := make([]pair, 0, len(keysAndValues)/2+1)
	if err != nil {
		read = append(read, pair{"err", err.Error()})
	}
	for i := 0; i < len(keysAndValues); i++ {
		key, ok := keysAndValues[i].(string)
		if !ok || i+1 == len(keysAndValues) {
			read = append(read, pair{badKey, keysAndValues[i]})
			continue
		}
		i++
		value := keysAndValues[i]
		if strings.Contains(strings.ToLower(key), "secret") {
			value = redacted
		}
		read = append(read, pair{key, value})
	}
	return read
}

// Fields are err and the pairs as logrus fields (see pairs for what is
// written under which key).
func Fields(err error, keysAndValues []any) map[string]any {
	read := pairs(err, keysAndValues)
	fields := make(map[string]any, len(read))
	for _, p := range read {
		fields[p.key] = p.value
	}
	return fields
}

// Line renders a message, err and the pairs as one line in the order
// given, for loggers that write text (tests, the probe command).
func Line(msg string, err error, keysAndValues []any) string {
	var line strings.Builder
	line.WriteString(msg)
	for _, p := range pairs(err, keysAndValues) {
		fmt.Fprintf(&line, " %s=%q", p.key, fmt.Sprint(p.value))
	}
	return line.String()
}
