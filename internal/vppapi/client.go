package vppapi

import (
	"context"
	"sync"
	"time"
)

// ClientConfig says where VPP is and how to talk to it.
type ClientConfig struct {
	// Socket is VPP's API socket (socksvr's socket-name).
	Socket string
	// Name is how VPP lists this client.
	Name string
	// Timeout bounds each call without a deadline of its own (0: DefaultTimeout).
	Timeout time.Duration
	// RetryInterval is the first wait before dialing again; it doubles up
	// to MaxRetryInterval (0: 100ms and 2s).
	RetryInterval, MaxRetryInterval time.Duration
	// OnConnect is called from Run after each successful dial, once Conn
	// returns the new connection; OnDisconnect after each loss, and after
	// each failed dial. Both may be nil.
	OnConnect    func(*Conn)
	OnDisconnect func(error)
}

// Client keeps one connection to VPP, dialing again whenever it is lost.
type Client struct {
	config ClientConfig

	mu   sync.Mutex
	conn *Conn
}

// NewClient returns a client that connects once Run runs.
func NewClient(config ClientConfig) *Client {
	if config.RetryInterval <= 0 {
		config.RetryInterval = 100 * time.Millisecond
	}
	if config.MaxRetryInterval <= 0 {
		config.MaxRetryInterval = 2 * time.Second
	}
	return &Client{config: config}
}

// Conn returns the current connection, or ErrNotConnected.
func (c *Client) Conn() (*Conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		return nil, ErrNotConnected
	}
	return c.conn, nil
}

// Run connects and reconnects until ctx ends, then closes the connection.
func (c *Client) Run(ctx context.Context) {
	wait := c.config.RetryInterval
	for ctx.Err() == nil {
		conn, err := Dial(ctx, c.config.Socket, c.config.Name, c.config.Timeout)
		if err != nil {
			if c.config.OnDisconnect != nil && ctx.Err() == nil {
				c.config.OnDisconnect(err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
			wait = min(2*wait, c.config.MaxRetryInterval)
			continue
		}
		wait = c.config.RetryInterval
		c.setConn(conn)
		if c.config.OnConnect != nil {
			c.config.OnConnect(conn)
		}
		select {
		case <-ctx.Done():
		case <-conn.Done():
		}
		c.setConn(nil)
		lost := conn.Err()
		conn.Close()
		if c.config.OnDisconnect != nil && ctx.Err() == nil {
			c.config.OnDisconnect(lost)
		}
	}
}

func (c *Client) setConn(conn *Conn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.conn = conn
}
