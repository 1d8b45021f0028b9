package msclient

import (
	"context"
	"strings"

	"google.golang.org/grpc"

	pb "memsidecar/gen/memsidecarv1"
)

// BlockPrefix starts every injection block the sidecar returns.
const BlockPrefix = "[Context from memory]"

// IsBlock reports whether a history message is an injection block.
func IsBlock(m *pb.Message) bool {
	return m.GetRole() == pb.Role_ROLE_USER && strings.HasPrefix(m.GetContent(), BlockPrefix)
}

// CountBlocks counts the injection blocks in a history.
func CountBlocks(history []*pb.Message) int {
	n := 0
	for _, m := range history {
		if IsBlock(m) {
			n++
		}
	}
	return n
}

// Inject asks for the memory block of the coming turn.
func (c *Client) Inject(ctx context.Context, req *pb.InjectRequest) (out *pb.InjectResponse, err error) {
	err = c.call(ctx, func(ctx context.Context, o ...grpc.CallOption) (e error) {
		out, e = c.Injection.Inject(ctx, req, o...)
		return
	})
	return
}

// PruneHistory removes the oldest blocks so that, with the incoming one, maxKeep remain.
func (c *Client) PruneHistory(ctx context.Context, history []*pb.Message, maxKeep uint32) (out *pb.PruneHistoryResponse, err error) {
	req := &pb.PruneHistoryRequest{Messages: history, MaxKeep: &maxKeep}
	err = c.call(ctx, func(ctx context.Context, o ...grpc.CallOption) (e error) {
		out, e = c.Injection.PruneHistory(ctx, req, o...)
		return
	})
	return
}

// RenderTranscript renders a history for a compactor, blocks left out.
func (c *Client) RenderTranscript(ctx context.Context, history []*pb.Message) (out *pb.RenderTranscriptResponse, err error) {
	err = c.call(ctx, func(ctx context.Context, o ...grpc.CallOption) (e error) {
		out, e = c.Injection.RenderTranscript(ctx, &pb.RenderTranscriptRequest{Messages: history}, o...)
		return
	})
	return
}

// ResetChannel forgets one channel's injection state.
func (c *Client) ResetChannel(ctx context.Context, channel string) (out *pb.ResetChannelResponse, err error) {
	err = c.call(ctx, func(ctx context.Context, o ...grpc.CallOption) (e error) {
		out, e = c.Injection.ResetChannel(ctx, &pb.ResetChannelRequest{ChannelId: channel}, o...)
		return
	})
	return
}
