// Package msclient is a typed wrapper over the generated memsidecar gRPC stubs.
//
// Every call gets a default deadline, carries the bearer token when one is set, and a
// failed call returns *Error with the gRPC code plus the sidecar's memsidecar-reason /
// memsidecar-field trailers.
package msclient

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	pb "github.com/memsidecar/memsidecar/clients/go/memsidecarv1"
)

// Client holds one connection and the four service stubs.
type Client struct {
	conn      *grpc.ClientConn
	Store     pb.MemoryStoreClient
	Injection pb.MemoryInjectionClient
	Settings  pb.SettingsClient
	Vault     pb.VaultClient
	// Timeout is the deadline given to a call whose context has none.
	Timeout time.Duration
	// Agent is the caller's agent id in the requests the client builds (WithAgent).
	Agent string
}

// Dial connects to addr (HOST:PORT, unix:PATH or unix:///PATH) and waits until the
// connection is up or the dial timeout passes (WithDialTimeout(0): no wait).
func Dial(addr string, opts ...Option) (*Client, error) {
	o := defaults()
	for _, opt := range opts {
		opt(&o)
	}
	ctx, cancel := context.Background(), context.CancelFunc(func() {})
	if o.dialTimeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, o.dialTimeout)
	}
	defer cancel()
	conn, err := grpc.DialContext(ctx, addr, o.dialOptions()...)
	if err != nil {
		return nil, err
	}
	return &Client{
		conn:      conn,
		Store:     pb.NewMemoryStoreClient(conn),
		Injection: pb.NewMemoryInjectionClient(conn),
		Settings:  pb.NewSettingsClient(conn),
		Vault:     pb.NewVaultClient(conn),
		Timeout:   o.timeout,
		Agent:     o.agent,
	}, nil
}

// Close releases the connection.
func (c *Client) Close() error { return c.conn.Close() }

// unary runs one generated unary method with the default deadline and converts its error.
func unary[Req, Resp any](c *Client, ctx context.Context, req Req,
	method func(context.Context, Req, ...grpc.CallOption) (Resp, error)) (out Resp, err error) {
	err = c.call(ctx, func(ctx context.Context, o ...grpc.CallOption) (e error) {
		out, e = method(ctx, req, o...)
		return
	})
	return
}

// call runs fn with the default deadline and converts its error.
func (c *Client) call(ctx context.Context, fn func(context.Context, ...grpc.CallOption) error) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	var trailer metadata.MD
	return wrap(fn(ctx, grpc.Trailer(&trailer)), trailer)
}
