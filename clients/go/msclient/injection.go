package msclient

import (
	"context"
	"strings"

	pb "github.com/memsidecar/memsidecar/clients/go/memsidecarv1"
	"google.golang.org/protobuf/proto"
)

// BlockPrefix starts every injection block the sidecar returns (block.proto's
// BLOCK_HEADER_CONTEXT, read from the descriptors).
var BlockPrefix = BlockHeaderText(pb.BlockHeader_BLOCK_HEADER_CONTEXT)

// BlockHeaderText is the literal header line a BlockHeader value stands for.
func BlockHeaderText(h pb.BlockHeader) string {
	value := h.Descriptor().Values().ByNumber(h.Number())
	return proto.GetExtension(value.Options(), pb.E_Text).(string)
}

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
func (c *Client) Inject(ctx context.Context, req *pb.InjectRequest) (*pb.InjectResponse, error) {
	return unary(c, ctx, req, c.Injection.Inject)
}

// PruneHistory drops the oldest blocks of a history so that, with the incoming one, maxKeep
// remain (0: the agent's max_injected_blocks_in_history; PruneHistoryKeep sends an explicit
// 0). With a channel, the sidecar learns which of that channel's blocks the history still
// holds: a memory whose blocks are all gone may be injected again (ReleasedTurns). The agent
// id is the client's (WithAgent).
func (c *Client) PruneHistory(ctx context.Context, channel string, history []*pb.Message, maxKeep uint32) (*pb.PruneHistoryResponse, error) {
	var keep *uint32
	if maxKeep > 0 {
		keep = &maxKeep
	}
	return c.PruneHistoryKeep(ctx, channel, history, keep)
}

// PruneHistoryKeep is PruneHistory with max_keep as the proto's optional field: nil leaves it
// unset (the agent's max_injected_blocks_in_history), proto.Uint32(0) removes every block
// (nothing is injected into the coming turn's history), proto.Uint32(n) keeps n with the
// incoming one.
func (c *Client) PruneHistoryKeep(ctx context.Context, channel string, history []*pb.Message, maxKeep *uint32) (*pb.PruneHistoryResponse, error) {
	req := &pb.PruneHistoryRequest{Messages: history, ChannelId: channel, AgentId: c.Agent, MaxKeep: maxKeep}
	return unary(c, ctx, req, c.Injection.PruneHistory)
}

// RenderTranscript renders a history for a compactor, blocks left out.
func (c *Client) RenderTranscript(ctx context.Context, history []*pb.Message) (*pb.RenderTranscriptResponse, error) {
	return unary(c, ctx, &pb.RenderTranscriptRequest{Messages: history}, c.Injection.RenderTranscript)
}

// ResetChannel forgets one channel's injection state.
func (c *Client) ResetChannel(ctx context.Context, channel string) (*pb.ResetChannelResponse, error) {
	return unary(c, ctx, &pb.ResetChannelRequest{ChannelId: channel, AgentId: c.Agent}, c.Injection.ResetChannel)
}

// GetInjectionTrace returns a channel's last committed turns (lastN 0 = every turn held):
// what each injected and what it dropped, and why.
func (c *Client) GetInjectionTrace(ctx context.Context, channel string, lastN uint32) (*pb.GetInjectionTraceResponse, error) {
	return unary(c, ctx, &pb.GetInjectionTraceRequest{ChannelId: channel, AgentId: c.Agent, LastN: lastN}, c.Injection.GetInjectionTrace)
}
