package main

import (
	"context"
	"fmt"
	"strings"

	pb "memsidecar/gen/memsidecarv1"
	"memsidecar/msclient"
)

const (
	channel = "go-example-channel"
	maxKeep = 2 // blocks kept including the incoming one: at most 1 old block survives a prune
)

// turn is one user message and what the injection for it must (or must not) contain.
type turn struct {
	text            string
	wantSeed        int // index into seedIDs expected among the injected items; -1 = none required
	forbidForgotten bool
}

var turns = []turn{
	{"Which database did we pick for the billing service?", 0, true},
	{"How do we deploy to the Kubernetes cluster on Fridays?", 1, true},
	{"What is the office cat called, and where does it sleep?", -1, true},
}

// runTurns is the channel-turn sequence: prune, inject, append the block, then the turn.
func runTurns(c *msclient.Client, r *report) {
	if len(seedIDs) != len(seeds) {
		r.check("channel turns", false, "seeding failed; skipped")
		return
	}
	ctx := context.Background()
	history := []*pb.Message{{Role: pb.Role_ROLE_SYSTEM, Content: "You are a helpful engineering agent."}}
	for i, t := range turns {
		history = prune(ctx, c, r, i+1, history)
		if block := inject(ctx, c, r, i+1, t); block != "" {
			history = append(history, &pb.Message{Role: pb.Role_ROLE_USER, Content: block})
		}
		history = append(history,
			&pb.Message{Role: pb.Role_ROLE_USER, Content: t.text},
			&pb.Message{Role: pb.Role_ROLE_ASSISTANT, Content: fmt.Sprintf("(assistant reply to turn %d)", i+1)})
	}
	checkSystemSource(ctx, c, r)
	render(ctx, c, r, history)
	reset(ctx, c, r)
}

func prune(ctx context.Context, c *msclient.Client, r *report, n int, history []*pb.Message) []*pb.Message {
	if r.pending("PruneHistory") {
		return history
	}
	reply, err := c.PruneHistory(ctx, history, maxKeep)
	if !r.called("PruneHistory", err) {
		return history
	}
	var blocks []int
	for i, m := range history {
		if msclient.IsBlock(m) {
			blocks = append(blocks, i)
		}
	}
	drop := len(blocks) - (maxKeep - 1)
	if drop < 0 {
		drop = 0
	}
	want := map[int]bool{}
	for _, i := range blocks[:drop] {
		want[i] = true
	}
	var kept []*pb.Message
	for i, m := range history {
		if !want[i] {
			kept = append(kept, m)
		}
	}
	ok := len(reply.RemovedIndices) == drop && sameMessages(reply.Messages, kept)
	for k, i := range reply.RemovedIndices {
		ok = ok && k < drop && int(i) == blocks[k]
	}
	r.check(fmt.Sprintf("turn %d PruneHistory(max_keep=%d) removes the %d oldest block(s)", n, maxKeep, drop), ok,
		"removed %v, kept %d of %d messages", reply.RemovedIndices, len(reply.Messages), len(history))
	return reply.Messages
}

func inject(ctx context.Context, c *msclient.Client, r *report, n int, t turn) string {
	if r.pending("Inject") {
		return ""
	}
	reply, err := c.Inject(ctx, &pb.InjectRequest{AgentId: agent, ChannelId: channel, Text: t.text, Source: "go-example"})
	if !r.called("Inject", err) {
		return ""
	}
	ids := map[string]bool{}
	for _, it := range reply.Items {
		ids[it.Id] = true
	}
	if t.wantSeed >= 0 {
		r.check(fmt.Sprintf("turn %d Inject returns a block with the relevant memory", n),
			strings.HasPrefix(reply.Block, msclient.BlockPrefix) && ids[seedIDs[t.wantSeed]] &&
				strings.Contains(reply.Block, seeds[t.wantSeed].Content[:20]),
			"skip_reason=%q items=%v block=%q", reply.SkipReason, reply.Items, reply.Block)
	} else {
		r.check(fmt.Sprintf("turn %d Inject block empty or well-formed", n),
			reply.Block == "" || strings.HasPrefix(reply.Block, msclient.BlockPrefix), "block=%q", reply.Block)
	}
	if t.forbidForgotten {
		r.check(fmt.Sprintf("turn %d Inject never injects a forgotten memory", n), !ids[forgottenID],
			"items=%v", reply.Items)
	}
	return reply.Block
}

func checkSystemSource(ctx context.Context, c *msclient.Client, r *report) {
	if r.pending("Inject") {
		return
	}
	reply, err := c.Inject(ctx, &pb.InjectRequest{AgentId: agent, ChannelId: channel, Text: turns[0].text, Source: "system"})
	if r.called("Inject", err) {
		r.check("Inject from source=system injects nothing", reply.Block == "" && len(reply.Items) == 0 &&
			reply.SkipReason != "", "skip_reason=%q block=%q", reply.SkipReason, reply.Block)
	}
}

func render(ctx context.Context, c *msclient.Client, r *report, history []*pb.Message) {
	reply, err := c.RenderTranscript(ctx, history)
	if !r.called("RenderTranscript", err) {
		return
	}
	ok := !strings.Contains(reply.Transcript, msclient.BlockPrefix) &&
		int(reply.BlocksSkipped) == msclient.CountBlocks(history)
	for _, m := range history {
		if !msclient.IsBlock(m) && m.Role != pb.Role_ROLE_SYSTEM {
			ok = ok && strings.Contains(reply.Transcript, m.Content)
		}
	}
	r.check("RenderTranscript keeps every turn and leaves the blocks out", ok,
		"blocks_skipped=%d (history has %d) transcript=%q", reply.BlocksSkipped, msclient.CountBlocks(history), reply.Transcript)
}

func reset(ctx context.Context, c *msclient.Client, r *report) {
	first, err := c.ResetChannel(ctx, channel)
	if !r.called("ResetChannel", err) {
		return
	}
	again, err := c.ResetChannel(ctx, channel)
	if r.called("ResetChannel", err) {
		injected := !r.pending("Inject")
		r.check("ResetChannel forgets the channel state once", first.Existed == injected && !again.Existed,
			"first=%v again=%v", first.Existed, again.Existed)
	}
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
