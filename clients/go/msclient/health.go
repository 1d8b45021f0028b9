package msclient

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// The pause between two health checks of WaitReady: doubled after each, up to the maximum.
const (
	readyFirstPause = 100 * time.Millisecond
	readyMaxPause   = 2 * time.Second
)

// WaitReady returns once the sidecar's gRPC health (the whole server) reports SERVING.
// While it cannot be reached (UNAVAILABLE) or reports NOT_SERVING (loading its model,
// warming up), it asks again with a growing pause; after timeout (or when ctx ends) it
// returns an error naming the last state seen. Other errors (a wrong token, ...) return at
// once. Dial with WithDialTimeout(0) to wait for a sidecar that is not listening yet.
func (c *Client) WaitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	health := healthpb.NewHealthClient(c.conn)
	pause, last := readyFirstPause, "no answer"
	for {
		attempt, stop := context.WithTimeout(ctx, c.Timeout)
		reply, err := unary(c, attempt, &healthpb.HealthCheckRequest{}, health.Check)
		stop()
		switch code := CodeOf(err); {
		case err == nil && reply.GetStatus() == healthpb.HealthCheckResponse_SERVING:
			return nil
		case err == nil:
			last = "the sidecar reports " + reply.GetStatus().String()
		case code == codes.Unavailable || code == codes.DeadlineExceeded:
			last = err.Error()
		default:
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the sidecar is not SERVING within %v (%s)", timeout, last)
		case <-time.After(pause):
		}
		if pause *= 2; pause > readyMaxPause {
			pause = readyMaxPause
		}
	}
}
