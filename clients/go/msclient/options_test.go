package msclient

import (
	"context"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/memsidecar/memsidecar/clients/go/memsidecarv1"
)

// recorder is a Settings server that records the metadata of each call and fails it with
// the sidecar's reason/field trailers.
type recorder struct {
	pb.UnimplementedSettingsServer
	got chan metadata.MD
}

func (r *recorder) GetConfig(ctx context.Context, _ *pb.GetConfigRequest) (*pb.GetConfigResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	r.got <- md
	grpc.SetTrailer(ctx, metadata.Pairs("memsidecar-reason", "UNKNOWN_KEY", "memsidecar-field", "agent_id"))
	return nil, status.Error(codes.InvalidArgument, "no such agent")
}

func serve(t *testing.T, opts ...grpc.ServerOption) (*recorder, string) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{got: make(chan metadata.MD, 1)}
	srv := grpc.NewServer(opts...)
	pb.RegisterSettingsServer(srv, rec)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return rec, lis.Addr().String()
}

func TestTokenIsSentAsBearerMetadataAndErrorsCarryTrailers(t *testing.T) {
	rec, addr := serve(t)
	c, err := Dial(addr, WithToken("s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.GetConfig(context.Background(), "a")
	if got := (<-rec.got).Get("authorization"); len(got) != 1 || got[0] != "Bearer s3cret" {
		t.Errorf("authorization metadata = %v", got)
	}
	e, ok := err.(*Error)
	if !ok || e.Code != codes.InvalidArgument || e.Reason != "UNKNOWN_KEY" || e.Field != "agent_id" ||
		e.Message != "no such agent" {
		t.Errorf("err = %#v", err)
	}
}

func TestNoTokenSendsNoAuthorization(t *testing.T) {
	rec, addr := serve(t)
	c, err := Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.GetConfig(context.Background(), "a")
	if got := (<-rec.got).Get("authorization"); len(got) != 0 {
		t.Errorf("authorization metadata = %v", got)
	}
}

func TestDefaultDeadlineIsApplied(t *testing.T) {
	var got bool
	c := &Client{Timeout: DefaultTimeout}
	c.call(context.Background(), func(ctx context.Context, _ ...grpc.CallOption) error {
		_, got = ctx.Deadline()
		return nil
	})
	if !got {
		t.Error("call without a deadline got none")
	}
}
