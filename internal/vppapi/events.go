package vppapi

import (
	"context"
	"fmt"
	"os"

	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
)

// Watch hands each message named as E that VPP sends on c, decoded, to
// deliver until c ends. deliver runs on c's reader goroutine and must
// return at once: every reply of c waits behind it. Watch before asking
// VPP for the events (a want_* request), so that none is missed; a second
// Watch of the same message replaces the first.
func Watch[E any, PE interface {
	*E
	vppmsg.Message
}](c *Conn, deliver func(PE)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.watchers[PE(new(E)).MessageName()] = func(data []byte) {
		event := PE(new(E))
		if vppmsg.Decode(data, event) == nil {
			deliver(event)
		}
	}
}

// WatchInterfaceEvents asks VPP for its interface events on c
// (want_interface_events) and hands each to deliver (see Watch). VPP
// sends one when an interface is created or deleted, or its admin or link
// state changes; changes close together come as one event. The
// subscription ends with c: after a reconnection, ask again.
func WatchInterfaceEvents(ctx context.Context, c *Conn, deliver func(*vppmsg.SwInterfaceEvent)) error {
	Watch(c, deliver)
	req := &vppmsg.WantInterfaceEvents{EnableDisable: 1, Pid: uint32(os.Getpid())}
	if err := c.Request(ctx, req, &vppmsg.WantInterfaceEventsReply{}); err != nil {
		return fmt.Errorf("subscribe to VPP's interface events: %w", err)
	}
	return nil
}

// watcher returns the handler Watch registered for the message name.
func (c *Conn) watcher(name string) func([]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.watchers[name]
}
