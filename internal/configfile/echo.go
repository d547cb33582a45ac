package configfile

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// What an error repeats of a config file's content is bounded, so that a
// huge value (a file holds up to MaxFileSize) does not become a log line
// of its size.
const (
	// maxEcho bounds a value an error quotes.
	maxEcho = 100
	// maxReason bounds what one problem says, echoes included, for
	// reasons that quote a value without Echo.
	maxReason = 1024
	// maxProblems bounds how many problems one error lists.
	maxProblems = 20
)

// Echo quotes value for an error message, cut to its first 100 bytes and
// saying how many more there were.
func Echo(value string) string {
	kept, cut := cutAt(value, maxEcho)
	if cut == 0 {
		return strconv.Quote(value)
	}
	return strconv.Quote(kept) + cutNote(cut)
}

// cutText cuts text to max bytes, saying how many more there were.
func cutText(text string, max int) string {
	kept, cut := cutAt(text, max)
	if cut == 0 {
		return text
	}
	return kept + cutNote(cut)
}

// cutAt returns at most max bytes of text, not splitting a UTF-8
// character, and how many bytes it left out.
func cutAt(text string, max int) (string, int) {
	if len(text) <= max {
		return text, 0
	}
	end := max
	for end > 0 && !utf8.RuneStart(text[end]) {
		end--
	}
	return text[:end], len(text) - end
}

func cutNote(cut int) string {
	if cut == 1 {
		return "... (1 more byte)"
	}
	return fmt.Sprintf("... (%d more bytes)", cut)
}

// boundedError cuts the text of an error that may quote the file's
// content (the YAML parser's); errors.Is and errors.As still see it.
type boundedError struct{ err error }

func (e boundedError) Error() string { return cutText(e.err.Error(), maxReason) }

func (e boundedError) Unwrap() error { return e.err }

// joinBounded joins problems, listing at most maxProblems of them.
func joinBounded(problems []error) error {
	if len(problems) > maxProblems {
		more := len(problems) - maxProblems
		problems = append(problems[:maxProblems:maxProblems], fmt.Errorf("and %d more problems", more))
	}
	return errors.Join(problems...)
}
