package handover_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contivpp/memif-agent/internal/handover"
	"github.com/contivpp/memif-agent/test/kit/testlog"
)

// holder records what the server asked of it.
type holder struct {
	refuse error
	asked  chan string
	ends   chan string
}

func newHolder(refuse error) *holder {
	return &holder{refuse: refuse, asked: make(chan string, 1), ends: make(chan string, 1)}
}

func (h *holder) HandOver(_ context.Context, successorUID string) error {
	h.asked <- successorUID
	return h.refuse
}
func (h *holder) SuccessorServing() { h.ends <- "serving" }
func (h *holder) SuccessorGone()    { h.ends <- "gone" }

func TestHandover(t *testing.T) {
	for _, tc := range []struct {
		name string
		// refuse is the holder's HandOver error.
		refuse error
		// serving: the successor says it serves; else it closes.
		serving bool
		wantEnd string
	}{
		{name: "successor serves", serving: true, wantEnd: "serving"},
		{name: "successor exits before it serves", wantEnd: "gone"},
		{name: "holder refuses", refuse: errors.New("still starting")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state", "checkpoint.json.lock.handover")
			h := newHolder(tc.refuse)
			server, err := handover.Serve(path, h, time.Minute, testlog.New(t))
			if err != nil {
				t.Fatal(err)
			}
			defer server.Close()
			granted, err := handover.Request(t.Context(), path, "pod-b")
			if got := <-h.asked; got != "pod-b" {
				t.Errorf("the holder was asked for %q, want pod-b", got)
			}
			if tc.refuse != nil {
				if err == nil || granted != nil {
					t.Fatalf("Request = %v, %v; want the holder's refusal", granted, err)
				}
				if want := "keeps the node: still starting"; !strings.Contains(err.Error(), want) {
					t.Errorf("Request error %q does not say %q", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.serving {
				err = granted.Serving()
			} else {
				err = granted.Close()
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := <-h.ends; got != tc.wantEnd {
				t.Errorf("the holder heard %q, want %q", got, tc.wantEnd)
			}
			// The successor serves its own socket at the same path now.
			next, err := handover.Serve(path, newHolder(nil), time.Minute, testlog.New(t))
			if err != nil {
				t.Fatalf("the successor cannot serve the handover socket: %v", err)
			}
			if err := next.Close(); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestRequestWithoutHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "checkpoint.json.lock.handover")
	_, err := handover.Request(t.Context(), path, "pod-b")
	if !errors.Is(err, handover.ErrNoHolder) {
		t.Fatalf("Request = %v, want ErrNoHolder", err)
	}
}
