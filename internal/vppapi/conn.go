package vppapi

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/contivpp/memif-agent/internal/vppapi/vppmsg"
)

// DefaultTimeout bounds a call whose context has no deadline.
const DefaultTimeout = 5 * time.Second

// frameHeaderSize is the socket transport's header before each message:
// 8 bytes of queue address (unused), the message length (big-endian u32)
// and 4 bytes of GC mark (unused).
const frameHeaderSize = 16

// maxFrameSize bounds a message read from VPP; the largest the agent sees
// is the message table.
const maxFrameSize = 16 << 20

// ErrNotConnected is returned by calls while no connection to VPP is up.
var ErrNotConnected = errors.New("not connected to VPP")

// ErrNoPlugin is a request's error when VPP does not load the optional
// plugin (vppmsg.OptionalPlugins) that defines it.
var ErrNoPlugin = errors.New("VPP does not load the plugin")

// VPPError is a reply whose retval is not zero.
type VPPError struct {
	Message string
	Retval  int32
}

func (e *VPPError) Error() string {
	return fmt.Sprintf("VPP refused %s: retval %d", e.Message, e.Retval)
}

// incoming is one message VPP sent: its name and its bytes after the ID.
type incoming struct {
	name string
	data []byte
}

// connections numbers the process's connections (Conn.Generation).
var connections atomic.Uint64

// Conn is one connection to VPP's API socket, safe for concurrent use.
type Conn struct {
	generation  uint64
	socket      string
	netConn     net.Conn
	timeout     time.Duration
	clientIndex uint32
	// ids and names map message names to IDs and back, for the messages of
	// package vppmsg.
	ids   map[string]uint16
	names map[uint16]string
	// contextAt is where each message's context starts in its frame, for
	// the few that do not start with it: VPP sends
	// sw_interface_rx_placement_details with the client's index first.
	contextAt map[uint16]int

	writeMu sync.Mutex

	mu      sync.Mutex
	pending map[uint32]*call
	// watchers handle the events of Watch, by message name.
	watchers    map[string]func([]byte)
	nextContext uint32
	err         error
	done        chan struct{}
	readerDone  chan struct{}
}

// Dial connects to VPP's API socket as clientName and checks the message
// table against package vppmsg.
func Dial(ctx context.Context, socket, clientName string, timeout time.Duration) (*Conn, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	var dialer net.Dialer
	netConn, err := dialer.DialContext(ctx, "unix", socket)
	if err != nil {
		return nil, fmt.Errorf("connect to VPP API socket %s (is VPP running with socksvr there?): %w", socket, err)
	}
	c := &Conn{generation: connections.Add(1), socket: socket, netConn: netConn, timeout: timeout, pending: map[uint32]*call{},
		watchers: map[string]func([]byte){}, done: make(chan struct{}), readerDone: make(chan struct{})}
	err = c.handshake(ctx, clientName)
	var mismatch *APIMismatchError
	if err != nil && !errors.As(err, &mismatch) {
		netConn.Close()
		return nil, err
	}
	go c.read()
	if mismatch != nil {
		mismatch.VPPVersion = c.version(ctx)
		c.Close()
		return nil, mismatch
	}
	return c, nil
}

// Generation numbers the connection among the process's, from 1: what VPP
// reported over one connection is told from another's by it, without
// keeping the connection, whose state its reader goroutine changes.
func (c *Conn) Generation() uint64 { return c.generation }

// version asks VPP its version, or returns "" when show_version is one
// of the messages whose definitions differ.
func (c *Conn) version(ctx context.Context) string {
	var reply vppmsg.ShowVersionReply
	if _, ok := c.ids[reply.MessageName()]; !ok {
		return ""
	}
	if c.Request(ctx, &vppmsg.ShowVersion{}, &reply) != nil {
		return ""
	}
	return reply.Version
}

// handshake sends sockclnt_create and learns the message table. memclnt's
// messages are registered first, from ID 1 in definition order, which is
// how a client can send sockclnt_create before it knows any ID; the table
// in the reply confirms it.
func (c *Conn) handshake(ctx context.Context, clientName string) error {
	deadline := time.Now().Add(c.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	c.netConn.SetDeadline(deadline)
	defer c.netConn.SetDeadline(time.Time{})
	createID := uint16(vppmsg.SockclntCreateMemclntIndex + 1)
	data, err := vppmsg.Encode(createID, &vppmsg.SockclntCreate{Name: clientName})
	if err != nil {
		return err
	}
	if err := c.writeFrame(data); err != nil {
		return fmt.Errorf("send sockclnt_create to VPP at %s: %w", c.socket, err)
	}
	frame, err := c.readFrame()
	if err != nil {
		return fmt.Errorf("read sockclnt_create_reply from VPP at %s: %w", c.socket, err)
	}
	var reply vppmsg.SockclntCreateReply
	if len(frame) < 2 {
		return fmt.Errorf("VPP at %s answered sockclnt_create with %d bytes", c.socket, len(frame))
	}
	if err := vppmsg.Decode(frame[2:], &reply); err != nil {
		return fmt.Errorf("VPP at %s: %w", c.socket, err)
	}
	if reply.Response != 0 {
		return fmt.Errorf("VPP at %s refused sockclnt_create: response %d", c.socket, reply.Response)
	}
	c.clientIndex = reply.Index
	table := make(map[string]tableEntry, len(reply.MessageTable))
	for _, entry := range reply.MessageTable {
		name, crc := splitNameCRC(entry.Name)
		table[name] = tableEntry{id: entry.Index, crc: crc}
	}
	if got := table["sockclnt_create"]; got.id != createID {
		return fmt.Errorf("VPP at %s registers sockclnt_create as message %d, not %d as its memclnt.api.json order says", c.socket, got.id, createID)
	}
	return c.learn(table)
}

type tableEntry struct {
	id  uint16
	crc string
}

// splitNameCRC splits "memif_create_v2_8c7de5f7" into name and "0x8c7de5f7".
func splitNameCRC(entry string) (string, string) {
	i := strings.LastIndexByte(entry, '_')
	if i < 0 {
		return entry, ""
	}
	return entry[:i], "0x" + entry[i+1:]
}

// learn keeps the IDs of the messages of vppmsg that VPP's table defines
// as they do, and returns an *APIMismatchError naming the others.
func (c *Conn) learn(table map[string]tableEntry) error {
	c.ids = make(map[string]uint16, len(vppmsg.Messages))
	c.names = make(map[uint16]string, len(vppmsg.Messages))
	c.contextAt = map[uint16]int{}
	mismatch := &APIMismatchError{Socket: c.socket}
	for name, newMessage := range vppmsg.Messages {
		want := newMessage().CRC()
		got, ok := table[name]
		switch {
		case !ok && vppmsg.PluginOf(name) != "":
			// Requests that need it fail with ErrNoPlugin.
		case !ok:
			mismatch.Missing = append(mismatch.Missing, name)
		case got.crc != want:
			mismatch.Differ = append(mismatch.Differ, MessageMismatch{Name: name, VPPCRC: got.crc, AgentCRC: want})
		default:
			c.ids[name] = got.id
			c.names[got.id] = name
			if at := contextOffset(got.id, newMessage()); at != 2 {
				c.contextAt[got.id] = at
			}
		}
	}
	if len(mismatch.Differ) == 0 && len(mismatch.Missing) == 0 {
		return nil
	}
	slices.Sort(mismatch.Missing)
	slices.SortFunc(mismatch.Differ, func(a, b MessageMismatch) int { return strings.Compare(a.Name, b.Name) })
	return mismatch
}

func (c *Conn) writeFrame(data []byte) error {
	frame := make([]byte, frameHeaderSize+len(data))
	binary.BigEndian.PutUint32(frame[8:12], uint32(len(data)))
	copy(frame[frameHeaderSize:], data)
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err := c.netConn.Write(frame)
	return err
}

func (c *Conn) readFrame() ([]byte, error) {
	var header [frameHeaderSize]byte
	if _, err := io.ReadFull(c.netConn, header[:]); err != nil {
		return nil, err
	}
	size := binary.BigEndian.Uint32(header[8:12])
	if size > maxFrameSize {
		return nil, fmt.Errorf("VPP sent a message of %d bytes, more than %d", size, maxFrameSize)
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(c.netConn, data); err != nil {
		return nil, err
	}
	return data, nil
}

// contextOffset is where m's context starts in its frame: where a marked
// context lands when m is encoded with every other field zero.
func contextOffset(id uint16, m vppmsg.Message) int {
	withContext, ok := m.(interface{ SetContext(uint32) })
	if !ok {
		return 2
	}
	marker := []byte{0xc0, 0x47, 0xe4, 0x7a}
	withContext.SetContext(binary.BigEndian.Uint32(marker))
	frame, err := vppmsg.Encode(id, m)
	if at := bytes.Index(frame, marker); err == nil && at >= 2 {
		return at
	}
	return 2
}

// read delivers every message to the call waiting on its context until the
// socket fails or is closed.
func (c *Conn) read() {
	defer close(c.readerDone)
	for {
		frame, err := c.readFrame()
		if err != nil {
			c.fail(fmt.Errorf("connection to VPP at %s lost: %w", c.socket, err))
			return
		}
		// Every reply starts with its ID and its context, or its ID, the
		// client's index and its context.
		id, at := binary.BigEndian.Uint16(frame), 2
		if offset, ok := c.contextAt[id]; ok {
			at = offset
		}
		if len(frame) < at+4 {
			continue
		}
		name := c.names[id]
		context := binary.BigEndian.Uint32(frame[at : at+4])
		if name == "memclnt_keepalive" {
			c.answerKeepalive(frame)
			continue
		}
		// An event carries no context of a call.
		if deliver := c.watcher(name); deliver != nil {
			deliver(frame[2:])
			continue
		}
		c.mu.Lock()
		waiting := c.pending[context]
		c.mu.Unlock()
		if waiting == nil || name == "" {
			continue
		}
		select {
		case waiting.messages <- incoming{name: name, data: frame[2:]}:
		case <-waiting.gone:
		}
	}
}

// answerKeepalive replies to VPP's liveness check, which it sends on
// connections that were idle for a while.
func (c *Conn) answerKeepalive(frame []byte) {
	var keepalive vppmsg.MemclntKeepalive
	if vppmsg.Decode(frame[2:], &keepalive) != nil {
		return
	}
	data, err := vppmsg.Encode(c.ids["memclnt_keepalive_reply"], &vppmsg.MemclntKeepaliveReply{Context: keepalive.Context})
	if err == nil {
		c.writeFrame(data)
	}
}

func (c *Conn) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	c.err = err
	close(c.done)
}

// Done is closed when the connection is lost or closed; Err says why.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err is why the connection ended, or nil while it is up.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close closes the connection and waits for its reader to stop.
func (c *Conn) Close() error {
	c.fail(fmt.Errorf("connection to VPP at %s closed", c.socket))
	err := c.netConn.Close()
	<-c.readerDone
	return err
}

// call is one request in flight: its context, where its messages arrive,
// and gone, closed when the caller stops listening.
type call struct {
	context  uint32
	messages chan incoming
	gone     chan struct{}
}

func (c *Conn) startCall() (*call, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return nil, c.err
	}
	c.nextContext++
	// Replies to a dump may be many; the reader must not block on them.
	cl := &call{context: c.nextContext, messages: make(chan incoming, 64), gone: make(chan struct{})}
	c.pending[cl.context] = cl
	return cl, nil
}

func (c *Conn) endCall(cl *call) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pending, cl.context)
	close(cl.gone)
}

func (c *Conn) send(cl *call, req vppmsg.Request) error {
	id, ok := c.ids[req.MessageName()]
	if plugin := vppmsg.PluginOf(req.MessageName()); !ok && plugin != "" {
		return fmt.Errorf("send %s: %w %s (add plugin %s_plugin.so { enable } to VPP's startup.conf)", req.MessageName(), ErrNoPlugin, plugin, plugin)
	}
	if !ok {
		return fmt.Errorf("send %s: not a message of package vppmsg", req.MessageName())
	}
	req.SetClientIndex(c.clientIndex)
	req.SetContext(cl.context)
	data, err := vppmsg.Encode(id, req)
	if err != nil {
		return err
	}
	if err := c.writeFrame(data); err != nil {
		return fmt.Errorf("send %s to VPP at %s: %w", req.MessageName(), c.socket, err)
	}
	return nil
}

func (c *Conn) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, c.timeout)
}

// receive waits for the next message of cl.
func (c *Conn) receive(ctx context.Context, cl *call, what string) (incoming, error) {
	select {
	case msg := <-cl.messages:
		return msg, nil
	case <-c.done:
		return incoming{}, fmt.Errorf("%s: %w", what, c.Err())
	case <-ctx.Done():
		return incoming{}, fmt.Errorf("%s: no answer from VPP at %s: %w", what, c.socket, ctx.Err())
	}
}

// Request sends req and decodes its reply into reply. A reply with a
// non-zero retval is a *VPPError.
func (c *Conn) Request(ctx context.Context, req vppmsg.Request, reply vppmsg.Reply) error {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	cl, err := c.startCall()
	if err != nil {
		return err
	}
	defer c.endCall(cl)
	if err := c.send(cl, req); err != nil {
		return err
	}
	msg, err := c.receive(ctx, cl, req.MessageName())
	if err != nil {
		return err
	}
	if msg.name != reply.MessageName() {
		return fmt.Errorf("%s: VPP answered %s, want %s", req.MessageName(), msg.name, reply.MessageName())
	}
	if err := vppmsg.Decode(msg.data, reply); err != nil {
		return err
	}
	if withRetval, ok := reply.(vppmsg.RetvalReply); ok && withRetval.GetRetval() != 0 {
		return &VPPError{Message: req.MessageName(), Retval: withRetval.GetRetval()}
	}
	return nil
}

// Dump sends req, then control_ping with the same context, and returns
// every details message VPP sends before the ping's reply.
func Dump[D any, PD interface {
	*D
	vppmsg.Reply
}](ctx context.Context, c *Conn, req vppmsg.Request) ([]PD, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	cl, err := c.startCall()
	if err != nil {
		return nil, err
	}
	defer c.endCall(cl)
	if err := c.send(cl, req); err != nil {
		return nil, err
	}
	if err := c.send(cl, &vppmsg.ControlPing{}); err != nil {
		return nil, err
	}
	var details []PD
	for {
		msg, err := c.receive(ctx, cl, req.MessageName())
		if err != nil {
			return nil, err
		}
		if msg.name == "control_ping_reply" {
			return details, nil
		}
		item := PD(new(D))
		if msg.name != item.MessageName() {
			return nil, fmt.Errorf("%s: VPP answered %s, want %s", req.MessageName(), msg.name, item.MessageName())
		}
		if err := vppmsg.Decode(msg.data, item); err != nil {
			return nil, err
		}
		details = append(details, item)
	}
}
