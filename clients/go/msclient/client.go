// Package msclient is a thin typed wrapper over the generated memsidecar gRPC stubs.
//
// Every call gets a default deadline, and a failed call returns *Error carrying the gRPC
// code plus the sidecar's memsidecar-reason / memsidecar-field trailers.
package msclient

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	pb "memsidecar/gen/memsidecarv1"
)

// DefaultTimeout is the deadline applied to a call whose context has none.
const DefaultTimeout = 5 * time.Second

// Client holds one connection and the three service stubs.
type Client struct {
	conn      *grpc.ClientConn
	Store     pb.MemoryStoreClient
	Injection pb.MemoryInjectionClient
	Settings  pb.SettingsClient
	Timeout   time.Duration
}

// Dial connects (plaintext, localhost sidecar) and waits up to timeout for the connection.
func Dial(addr string, timeout time.Duration) (*Client, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conn, err := grpc.DialContext(ctx, addr, grpc.WithInsecure(), grpc.WithBlock())
	if err != nil {
		return nil, err
	}
	return &Client{
		conn:      conn,
		Store:     pb.NewMemoryStoreClient(conn),
		Injection: pb.NewMemoryInjectionClient(conn),
		Settings:  pb.NewSettingsClient(conn),
		Timeout:   DefaultTimeout,
	}, nil
}

// Close releases the connection.
func (c *Client) Close() error { return c.conn.Close() }

// call runs one unary RPC with the default deadline and converts its error.
func (c *Client) call(ctx context.Context, fn func(context.Context, ...grpc.CallOption) error) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	var trailer metadata.MD
	return wrap(fn(ctx, grpc.Trailer(&trailer)), trailer)
}
