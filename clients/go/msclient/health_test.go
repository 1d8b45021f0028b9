package msclient

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// watched is a health server that reports each Check it answers.
type watched struct {
	*health.Server
	asked chan struct{}
}

func (w *watched) Check(ctx context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	defer func() { w.asked <- struct{}{} }()
	return w.Server.Check(ctx, req)
}

func serveHealth(t *testing.T, lis net.Listener) *watched {
	w := &watched{Server: health.NewServer(), asked: make(chan struct{}, 100)}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, w)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return w
}

func TestWaitReadyWaitsWhileNotServing(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w := serveHealth(t, lis)
	w.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	c, err := Dial(lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.WaitReady(context.Background(), time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "not SERVING") {
		t.Fatalf("want a timeout naming the state, got %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- c.WaitReady(context.Background(), time.Minute) }()
	<-w.asked // the earlier call's answer
	<-w.asked // the waiting call asked and was told NOT_SERVING
	w.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestWaitReadyRetriesUntilTheSidecarListens(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close() // nothing listens: UNAVAILABLE
	c, err := Dial(addr, WithDialTimeout(0))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.WaitReady(context.Background(), 50*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "not SERVING within") {
		t.Fatalf("want UNAVAILABLE waited on until the timeout, got %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- c.WaitReady(context.Background(), time.Minute) }()
	again, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	serveHealth(t, again)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
