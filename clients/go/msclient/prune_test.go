package msclient

import (
	"context"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	pb "github.com/memsidecar/memsidecar/clients/go/memsidecarv1"
)

// pruneRecorder is a MemoryInjection server that records each PruneHistory request as received.
type pruneRecorder struct {
	pb.UnimplementedMemoryInjectionServer
	got chan *pb.PruneHistoryRequest
}

func (r *pruneRecorder) PruneHistory(_ context.Context, req *pb.PruneHistoryRequest) (*pb.PruneHistoryResponse, error) {
	r.got <- req
	return &pb.PruneHistoryResponse{}, nil
}

func TestPruneHistoryKeepSendsAnExplicitZeroAndNilLeavesMaxKeepUnset(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec := &pruneRecorder{got: make(chan *pb.PruneHistoryRequest, 1)}
	srv := grpc.NewServer()
	pb.RegisterMemoryInjectionServer(srv, rec)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	c, err := Dial(lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	cases := []struct {
		name string
		call func() error
		want *uint32 // nil: max_keep unset on the wire
	}{
		{"PruneHistoryKeep(0)", func() error { _, err := c.PruneHistoryKeep(ctx, "ch", nil, proto.Uint32(0)); return err }, proto.Uint32(0)},
		{"PruneHistoryKeep(nil)", func() error { _, err := c.PruneHistoryKeep(ctx, "ch", nil, nil); return err }, nil},
		{"PruneHistory(0)", func() error { _, err := c.PruneHistory(ctx, "ch", nil, 0); return err }, nil},
		{"PruneHistory(3)", func() error { _, err := c.PruneHistory(ctx, "ch", nil, 3); return err }, proto.Uint32(3)},
	}
	for _, tc := range cases {
		if err := tc.call(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got := (<-rec.got).MaxKeep
		if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
			t.Errorf("%s sent max_keep %v, want %v", tc.name, got, tc.want)
		}
	}
}
