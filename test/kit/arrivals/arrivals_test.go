package arrivals

import (
	"context"
	"testing"
	"time"
)

func TestAwaitSkipsOtherKeysAndKeepsArrivalTimes(t *testing.T) {
	log := New(4)
	ctx := context.Background()
	before := time.Now()
	for _, key := range []string{"a", "b", "c"} {
		if !log.Note(ctx, key) {
			t.Fatalf("Note(%s) refused", key)
		}
	}
	after := time.Now()
	if at := log.Await(t, "b", time.Minute); at.Before(before) || at.After(after) {
		t.Errorf("b arrived at %v, want between %v and %v", at, before, after)
	}
	if at := log.Await(t, "c", time.Minute); at.Before(before) || at.After(after) {
		t.Errorf("c arrived at %v, want between %v and %v", at, before, after)
	}
}

func TestNoteGivesUpWhenItsContextEnds(t *testing.T) {
	log := New(1)
	ctx, cancel := context.WithCancel(context.Background())
	if !log.Note(ctx, "a") {
		t.Fatal("Note into an empty log refused")
	}
	cancel()
	if log.Note(ctx, "b") {
		t.Error("Note into a full log with its context ended = true, want false")
	}
}
