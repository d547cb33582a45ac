package eventloop

import (
	"context"
	"errors"
	"testing"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	"github.com/contivpp/memif-agent/test/kit/fakevswitch"
)

// benchHandler puts one fixed value per event: the cheapest useful handler.
type benchHandler struct {
	key string
}

func (h *benchHandler) String() string                        { return h.key }
func (h *benchHandler) HandlesEvent(controllerapi.Event) bool { return true }
func (h *benchHandler) Resync(controllerapi.Event, controllerapi.EventOperations) error {
	return nil
}
func (h *benchHandler) Update(_ controllerapi.Event, txn controllerapi.EventOperations) (string, error) {
	txn.Put(h.key, ifValue(h.key, "bench"))
	return "", nil
}
func (h *benchHandler) Revert(controllerapi.Event) error { return nil }

func benchLoop(b *testing.B) *Loop {
	b.Helper()
	handlers := []controllerapi.EventHandler{&benchHandler{key: "h1"}, &benchHandler{key: "h2"}, &benchHandler{key: "h3"}}
	loop, err := New(DefaultConfig(), Deps{Handlers: handlers, Committer: fakevswitch.Committer{}})
	if err != nil {
		b.Fatal(err)
	}
	loop.Start()
	b.Cleanup(func() { _ = loop.Close() })
	// The startup resync has run once a first event is done.
	warmUp := newEvent("WarmUp", controllerapi.BestEffort, controllerapi.Forward)
	if err := loop.PushEvent(warmUp); err != nil {
		b.Fatal(err)
	}
	if err := warmUp.Wait(context.Background()); err != nil {
		b.Fatal(err)
	}
	return loop
}

// BenchmarkNonBlockingEvent pushes non-blocking events through three
// handlers as fast as the queue takes them.
func BenchmarkNonBlockingEvent(b *testing.B) {
	loop := benchLoop(b)
	events := make([]*testEvent, b.N)
	for i := range events {
		events[i] = newEvent("NonBlocking", controllerapi.BestEffort, controllerapi.Forward)
	}
	half := DefaultConfig().QueueSize / 2
	b.ResetTimer()
	for i, event := range events {
		err := loop.PushEvent(event)
		if errors.Is(err, controllerapi.ErrEventQueueFull) {
			// Like a well-behaved pusher: let the queue drain to half, retry.
			err = events[i-half].Wait(context.Background())
			if err == nil {
				err = loop.PushEvent(event)
			}
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := events[len(events)-1].Wait(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkBlockingEvent pushes one blocking event at a time through three
// handlers and waits for each result.
func BenchmarkBlockingEvent(b *testing.B) {
	loop := benchLoop(b)
	b.ResetTimer()
	for range b.N {
		event := newEvent("Blocking", controllerapi.BestEffort, controllerapi.Forward)
		event.Blocking = true
		if err := loop.PushEvent(event); err != nil {
			b.Fatal(err)
		}
		if err := event.Wait(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkHandlersWithoutLoop is the baseline: the same three handlers and
// commit called directly, so the ratio to it is the loop's own cost.
func BenchmarkHandlersWithoutLoop(b *testing.B) {
	handlers := []controllerapi.EventHandler{&benchHandler{key: "h1"}, &benchHandler{key: "h2"}, &benchHandler{key: "h3"}}
	var committer fakevswitch.Committer
	b.ResetTimer()
	for range b.N {
		event := newEvent("Direct", controllerapi.BestEffort, controllerapi.Forward)
		txn := newEventTxn(1)
		for _, handler := range handlers {
			if _, err := handler.Update(event, txn); err != nil {
				b.Fatal(err)
			}
		}
		if err := committer.Commit(context.Background(), controllerapi.CommitRequest{Changes: txn.commitChanges(false)}); err != nil {
			b.Fatal(err)
		}
		event.Done(nil)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
