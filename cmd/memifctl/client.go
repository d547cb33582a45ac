package main

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"syscall"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	memifv1 "github.com/contivpp/memif-agent/api/memif/v1"
)

// client is a connection to the agent's API.
type client struct {
	memifv1.MemifAgentClient
	conn *grpc.ClientConn
}

// dial checks that the agent answers on socket, so that a missing agent or
// a permission problem is reported plainly rather than as a gRPC status,
// then connects.
func dial(socket string) (*client, error) {
	if err := checkSocket(socket); err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("connect to memif-agent at %s: %w", socket, err)
	}
	return &client{MemifAgentClient: memifv1.NewMemifAgentClient(conn), conn: conn}, nil
}

// Close closes the connection.
func (c *client) Close() error { return c.conn.Close() }

func checkSocket(socket string) error {
	conn, err := net.Dial("unix", socket)
	if err == nil {
		return conn.Close()
	}
	return explainDialError(socket, err)
}

func explainDialError(socket string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("memif-agent is not running: no API socket at %s (is the agent started? --socket)", socket)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("memif-agent is not running: nothing answers on the API socket %s (is the agent started? --socket)", socket)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("cannot use the memif-agent API socket %s: permission denied: run as root or a user that can read %s", socket, socket)
	}
	return fmt.Errorf("connect to memif-agent at %s: %w", socket, err)
}

// explainStatus turns an API error into what the user should read.
func explainStatus(what string, err error) error {
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("%s: %w", what, err)
	}
	switch st.Code() {
	case codes.NotFound, codes.InvalidArgument:
		return errors.New(st.Message())
	case codes.ResourceExhausted, codes.Unavailable:
		return fmt.Errorf("%s: %s", what, st.Message())
	}
	return fmt.Errorf("%s: %s: %s", what, st.Code(), st.Message())
}
