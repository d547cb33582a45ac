package kubeclient

import (
	"context"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// Follow starts factory and, once informer's cache is filled, calls
// report with what read returns; then again each time informer sees a
// change after which read returns something else (equal tells), until
// ctx ends; it returns nil then, or read's error. report runs on Follow's
// goroutine, one call at a time: changes made while it runs gather into
// the next read.
func Follow[T any](ctx context.Context, factory informers.SharedInformerFactory, informer cache.SharedIndexInformer,
	read func() (T, error), equal func(a, b T) bool, report func(T)) error {
	changed := make(chan struct{}, 1)
	poke := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { poke() },
		UpdateFunc: func(any, any) { poke() },
		DeleteFunc: func(any) { poke() },
	})
	if err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return nil
	}
	var last T
	for first := true; ; first = false {
		value, err := read()
		if err != nil {
			return err
		}
		if first || !equal(value, last) {
			report(value)
			last = value
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		}
	}
}
