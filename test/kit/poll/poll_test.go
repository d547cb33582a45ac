package poll

import (
	"context"
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

func TestWait(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name    string
		ctx     context.Context
		timeout time.Duration
		failing int
		wantErr string
	}{
		{name: "returns nil once check succeeds", ctx: context.Background(), timeout: time.Minute, failing: 2},
		{name: "returns the last error after the timeout", ctx: context.Background(), timeout: 0, failing: 100, wantErr: "after 0s: call 1"},
		{name: "returns on the context's end with the last error", ctx: canceled, timeout: time.Minute, failing: 100, wantErr: "context canceled: last: call 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			err := Wait(tt.ctx, tt.timeout, time.Millisecond, func() error {
				calls++
				if calls <= tt.failing {
					return fmt.Errorf("call %d", calls)
				}
				return nil
			})
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Wait: %v; want nil after %d failing calls", err, tt.failing)
			case tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr):
				t.Fatalf("Wait: %v; want %q", err, tt.wantErr)
			}
		})
	}
}
