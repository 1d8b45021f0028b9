package main

import (
	"fmt"
	"strings"

	pb "github.com/memsidecar/memsidecar/clients/go/memsidecarv1"
	"github.com/memsidecar/memsidecar/clients/go/msclient"
	"google.golang.org/protobuf/proto"
)

const maxKeep = 2 // blocks kept including the incoming one: at most 1 old block survives a prune

// turn is one user message and the seed its injection must contain (-1 = none required).
type turn struct {
	text     string
	wantSeed int
}

var turns = []turn{
	{"Which database did we pick for the billing service?", 0},
	{"How do we deploy to the Kubernetes cluster on Fridays?", 1},
	{"What is the office cat called, and where does it sleep?", -1},
}

// runTurns is the channel-turn sequence: prune, inject, append the block, then the turn.
func (s *session) runTurns() {
	if len(s.seedIDs) != len(seeds) {
		s.check("channel turns", false, "seeding failed; skipped")
		return
	}
	history := []*pb.Message{{Role: pb.Role_ROLE_SYSTEM, Content: "You are a helpful engineering agent."}}
	for i, t := range turns {
		history = s.prune(i+1, history)
		if block := s.inject(i+1, t); block != "" {
			history = append(history, &pb.Message{Role: pb.Role_ROLE_USER, Content: block})
		}
		history = append(history,
			&pb.Message{Role: pb.Role_ROLE_USER, Content: t.text},
			&pb.Message{Role: pb.Role_ROLE_ASSISTANT, Content: fmt.Sprintf("(assistant reply to turn %d)", i+1)})
	}
	s.pruneAll(history)
	s.checkSystemSource()
	s.render(history)
	s.renderLong()
	s.trace()
	s.reset()
}

// trace: the channel's trace holds the last two of the three turns just injected.
func (s *session) trace() {
	reply, err := s.c.GetInjectionTrace(s.ctx, s.channel, 2)
	if !s.called("GetInjectionTrace", err) {
		return
	}
	got := []uint64{}
	for _, t := range reply.Turns {
		got = append(got, t.Turn)
	}
	s.check("GetInjectionTrace returns the last 2 turns", len(got) == 2 && got[0] == 2 && got[1] == 3,
		"turns=%v", got)
}

// expectedPrune is the reference: indices of the oldest blocks beyond maxKeep-1, and the rest.
func expectedPrune(history []*pb.Message) (removed []int, kept []*pb.Message) {
	var blocks []int
	for i, m := range history {
		if msclient.IsBlock(m) {
			blocks = append(blocks, i)
		}
	}
	if drop := len(blocks) - (maxKeep - 1); drop > 0 {
		removed = blocks[:drop]
	}
	for i, m := range history {
		if !contains(removed, i) {
			kept = append(kept, m)
		}
	}
	return removed, kept
}

func (s *session) prune(n int, history []*pb.Message) []*pb.Message {
	reply, err := s.c.PruneHistory(s.ctx, "", history, maxKeep)
	if !s.called("PruneHistory", err) {
		return history
	}
	removed, kept := expectedPrune(history)
	ok := len(reply.RemovedIndices) == len(removed) && sameMessages(reply.Messages, kept)
	for k, i := range reply.RemovedIndices {
		ok = ok && k < len(removed) && int(i) == removed[k]
	}
	s.check(fmt.Sprintf("turn %d PruneHistory(max_keep=%d) removes the %d oldest block(s)", n, maxKeep, len(removed)), ok,
		"removed %v, kept %d of %d messages", reply.RemovedIndices, len(reply.Messages), len(history))
	return reply.Messages
}

// pruneAll: an explicit max_keep = 0 (not the agent's default) removes every block and
// keeps every other message. No channel: the channel's state stays as the turns left it.
func (s *session) pruneAll(history []*pb.Message) {
	reply, err := s.c.PruneHistoryKeep(s.ctx, "", history, proto.Uint32(0))
	if !s.called("PruneHistory", err) {
		return
	}
	blocks := msclient.CountBlocks(history)
	s.check("PruneHistoryKeep(max_keep=0) removes every block", blocks > 0 &&
		len(reply.RemovedIndices) == blocks && msclient.CountBlocks(reply.Messages) == 0 &&
		len(reply.Messages) == len(history)-blocks,
		"%d blocks in %d messages; removed %v, kept %d", blocks, len(history), reply.RemovedIndices,
		len(reply.Messages))
}

func (s *session) inject(n int, t turn) string {
	reply, err := s.c.Inject(s.ctx, &pb.InjectRequest{AgentId: s.agent, ChannelId: s.channel, Text: t.text, Source: "go-selftest"})
	if !s.called("Inject", err) {
		return ""
	}
	ids := map[string]bool{}
	for _, it := range reply.Items {
		ids[it.Id] = true
	}
	if t.wantSeed >= 0 {
		s.check(fmt.Sprintf("turn %d Inject returns a block with the relevant memory", n),
			strings.HasPrefix(reply.Block, msclient.BlockPrefix) && ids[s.seedIDs[t.wantSeed]] &&
				strings.Contains(reply.Block, seeds[t.wantSeed].Content[:20]),
			"skip_reason=%q items=%v block=%q", reply.SkipReason, reply.Items, reply.Block)
	} else {
		s.check(fmt.Sprintf("turn %d Inject block empty or well-formed", n),
			reply.Block == "" || strings.HasPrefix(reply.Block, msclient.BlockPrefix), "block=%q", reply.Block)
	}
	s.check(fmt.Sprintf("turn %d Inject never injects a forgotten memory", n), !ids[s.forgot], "items=%v", reply.Items)
	return reply.Block
}

func (s *session) checkSystemSource() {
	reply, err := s.c.Inject(s.ctx, &pb.InjectRequest{AgentId: s.agent, ChannelId: s.channel, Text: turns[0].text, Source: "system"})
	if s.called("Inject", err) {
		s.check("Inject from source=system injects nothing", reply.Block == "" && len(reply.Items) == 0 &&
			reply.SkipReason != "", "skip_reason=%q block=%q", reply.SkipReason, reply.Block)
	}
}

func (s *session) render(history []*pb.Message) {
	reply, err := s.c.RenderTranscript(s.ctx, history)
	if !s.called("RenderTranscript", err) {
		return
	}
	ok := !strings.Contains(reply.Transcript, msclient.BlockPrefix) &&
		int(reply.BlocksSkipped) == msclient.CountBlocks(history)
	for _, m := range history {
		if !msclient.IsBlock(m) && m.Role != pb.Role_ROLE_SYSTEM {
			ok = ok && strings.Contains(reply.Transcript, m.Content)
		}
	}
	s.check("RenderTranscript keeps every turn and leaves the blocks out", ok,
		"blocks_skipped=%d (history has %d) transcript=%q", reply.BlocksSkipped, msclient.CountBlocks(history), reply.Transcript)
}

// renderLong: a history past grpc's 4 MiB default comes back whole (the sidecar takes 16 MiB).
func (s *session) renderLong() {
	line := strings.Repeat("a long pasted log line that the user keeps sending ", 20)
	history := make([]*pb.Message, 6000)
	for i := range history {
		history[i] = &pb.Message{Role: pb.Role_ROLE_USER, Content: fmt.Sprintf("%d %s", i, line)}
	}
	reply, err := s.c.RenderTranscript(s.ctx, history)
	if !s.called("RenderTranscript of a 6 MB history", err) {
		return
	}
	s.check("RenderTranscript returns a 6 MB history whole", strings.Count(reply.Transcript, line) == len(history),
		"%d of %d turns", strings.Count(reply.Transcript, line), len(history))
}

func (s *session) reset() {
	first, err := s.c.ResetChannel(s.ctx, s.channel)
	if !s.called("ResetChannel", err) {
		return
	}
	again, err := s.c.ResetChannel(s.ctx, s.channel)
	if s.called("ResetChannel", err) {
		s.check("ResetChannel forgets the channel state once", first.Existed && !again.Existed,
			"first=%v again=%v", first.Existed, again.Existed)
	}
}

func contains(values []int, v int) bool {
	for _, x := range values {
		if x == v {
			return true
		}
	}
	return false
}

func sameMessages(a, b []*pb.Message) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Role != b[i].Role || a[i].Content != b[i].Content {
			return false
		}
	}
	return true
}
