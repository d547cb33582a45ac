package poll

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestUntilReturnsOnceCheckSucceeds(t *testing.T) {
	calls := 0
	Until(t, time.Minute, "third call succeeds", func() error {
		calls++
		if calls < 3 {
			return fmt.Errorf("call %d", calls)
		}
		return nil
	})
	if calls != 3 {
		t.Fatalf("check called %d times; want 3 (until it succeeds, then no more)", calls)
	}
}

// recorder is a testing.TB whose Fatalf records the failure and ends only
// the goroutine it is called on, as testing's own Fatalf does.
type recorder struct {
	testing.TB
	failure string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failure = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestUntilFailsWithTheLastError(t *testing.T) {
	tb := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Until(tb, 0, "socket appears", func() error { return errors.New("no socket yet") })
	}()
	<-done
	if want := "socket appears: no socket yet"; !strings.Contains(tb.failure, want) {
		t.Fatalf("failure %q; want it to hold %q", tb.failure, want)
	}
}
