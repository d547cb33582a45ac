package backoff_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/contivpp/memif-agent/internal/backoff"
)

func TestNextDoublesUpToMaxAndResetStartsOver(t *testing.T) {
	const ms = time.Millisecond
	cases := []struct {
		name     string
		min, max time.Duration
		// calls are "next" or "reset"; want holds what each next returned.
		calls []string
		want  []time.Duration
	}{
		{"doubles to the max", 10 * ms, 50 * ms, []string{"next", "next", "next", "next", "next"}, []time.Duration{10 * ms, 20 * ms, 40 * ms, 50 * ms, 50 * ms}},
		{"reset starts over", 5 * ms, time.Second, []string{"next", "next", "reset", "next", "next"}, []time.Duration{5 * ms, 10 * ms, 5 * ms, 10 * ms}},
		{"max below min is min", 100 * ms, 10 * ms, []string{"next", "next"}, []time.Duration{100 * ms, 100 * ms}},
		{"min equal to max stays", 30 * ms, 30 * ms, []string{"next", "next", "next"}, []time.Duration{30 * ms, 30 * ms, 30 * ms}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			delay := backoff.New(tc.min, tc.max)
			var got []time.Duration
			for _, call := range tc.calls {
				if call == "reset" {
					delay.Reset()
					continue
				}
				got = append(got, delay.Next())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("delays = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestWaitEndsWithItsContext(t *testing.T) {
	cases := []struct {
		name   string
		cancel bool
		want   bool
	}{
		{"waits the delay out", false, true},
		{"returns false once the context ends", true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			// A delay no test waits out when the context ends.
			delay := backoff.New(time.Millisecond, time.Millisecond)
			if tc.cancel {
				delay = backoff.New(time.Hour, time.Hour)
				cancel()
			}
			if got := delay.Wait(ctx); got != tc.want {
				t.Errorf("Wait = %v, want %v", got, tc.want)
			}
		})
	}
}
