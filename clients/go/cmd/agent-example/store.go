package main

import (
	"context"

	"google.golang.org/grpc/codes"

	pb "memsidecar/gen/memsidecarv1"
	"memsidecar/msclient"
)

const agent = "go-agent"

// seeds are the memories the example loop injects; forgotten is never to be injected.
var seeds = []*pb.Memory{
	{Type: pb.MemoryType_MEMORY_TYPE_DECISION, Content: "We chose PostgreSQL 16 as the primary database for the billing service."},
	{Type: pb.MemoryType_MEMORY_TYPE_FACT, Content: "The deploy pipeline builds on every merge and ships to the Kubernetes cluster each Friday."},
	{Type: pb.MemoryType_MEMORY_TYPE_PREFERENCE, Content: "The user prefers short answers with Go code examples."},
	{Type: pb.MemoryType_MEMORY_TYPE_TODO, Content: "Rotate the JWT signing keys before the March release."},
}

var forgottenSeed = &pb.Memory{Type: pb.MemoryType_MEMORY_TYPE_FACT, Content: "The office cat is called Pixel and sleeps on the build server."}

// ids of the stored seeds, in seed order, and of the forgotten memory.
var seedIDs []string
var forgottenID string

func runStore(c *msclient.Client, r *report) {
	ctx := context.Background()
	for _, m := range seeds {
		m.AgentId = agent
		reply, err := c.Upsert(ctx, m)
		if !r.called("UpsertMemory", err) {
			return
		}
		r.check("UpsertMemory creates "+m.Type.String(), reply.Created && reply.Memory.Version == 1 &&
			len(reply.Memory.Id) == 36 && reply.Memory.Content == m.Content, "reply %v", reply)
		seedIDs = append(seedIDs, reply.Memory.Id)
	}
	checkUpdate(ctx, c, r)
	checkReads(ctx, c, r)
	checkEdges(ctx, c, r)
	checkImport(ctx, c, r)
	checkErrors(ctx, c, r)
	checkForget(ctx, c, r)
	checkSearch(ctx, c, r)
}

func checkUpdate(ctx context.Context, c *msclient.Client, r *report) {
	first, err := c.Upsert(ctx, &pb.Memory{Id: "go-fixed-id", Type: pb.MemoryType_MEMORY_TYPE_EVENT, Content: "Sprint review notes, first draft.", AgentId: agent})
	if !r.called("UpsertMemory", err) {
		return
	}
	second, err := c.Upsert(ctx, &pb.Memory{Id: "go-fixed-id", Type: pb.MemoryType_MEMORY_TYPE_EVENT, Content: "Sprint review notes, final version.", AgentId: agent})
	if r.called("UpsertMemory", err) {
		r.check("UpsertMemory updates in place", first.Created && !second.Created &&
			second.Memory.Version == 2 && second.Memory.Content == "Sprint review notes, final version.", "first %v second %v", first, second)
	}
}

func checkReads(ctx context.Context, c *msclient.Client, r *report) {
	got, err := c.Get(ctx, seedIDs[0])
	if r.called("GetMemory", err) {
		r.check("GetMemory returns the stored memory", got.Id == seedIDs[0] && got.Content == seeds[0].Content &&
			got.Importance != nil && *got.Importance > 0.79 && *got.Importance < 0.81, "got %v", got)
	}
	page, err := c.List(ctx, &pb.ListMemoriesRequest{AgentId: agent, Types: []pb.MemoryType{pb.MemoryType_MEMORY_TYPE_DECISION, pb.MemoryType_MEMORY_TYPE_TODO}, Sort: pb.SortOrder_SORT_ORDER_IMPORTANCE})
	if r.called("ListMemories", err) {
		ok := len(page.Memories) == 2
		for _, m := range page.Memories {
			ok = ok && (m.Id == seedIDs[0] || m.Id == seedIDs[3])
		}
		r.check("ListMemories filters by type", ok, "got %d memories: %v", len(page.Memories), page.Memories)
	}
}

func checkEdges(ctx context.Context, c *msclient.Client, r *report) {
	edge, err := c.AddEdge(ctx, &pb.Edge{SourceId: seedIDs[3], TargetId: seedIDs[0], Relation: pb.Relation_RELATION_RELATED_TO})
	if !r.called("AddEdge", err) {
		return
	}
	r.check("AddEdge default weight 0.5", edge.Weight != nil && *edge.Weight == 0.5 && edge.SourceId == seedIDs[3], "edge %v", edge)
	err = c.RemoveEdge(ctx, seedIDs[3], seedIDs[0], pb.Relation_RELATION_RELATED_TO)
	if r.called("RemoveEdge", err) {
		err = c.RemoveEdge(ctx, seedIDs[3], seedIDs[0], pb.Relation_RELATION_RELATED_TO)
		r.check("RemoveEdge twice is NOT_FOUND", msclient.CodeOf(err) == codes.NotFound, "err %v", err)
	}
}

func checkImport(ctx context.Context, c *msclient.Client, r *report) {
	items := []*pb.Memory{
		{Type: pb.MemoryType_MEMORY_TYPE_OBSERVATION, Content: "Imported observation one.", AgentId: agent},
		{Type: pb.MemoryType_MEMORY_TYPE_OBSERVATION, Content: "   ", AgentId: agent},
		{Type: pb.MemoryType_MEMORY_TYPE_GOAL, Content: "Imported goal: ship the v2 API by June.", AgentId: agent},
	}
	sum, err := c.Import(ctx, items)
	if r.called("ImportMemories", err) {
		r.check("ImportMemories stores valid items, rejects the blank one", sum.Received == 3 && sum.Stored == 2 &&
			sum.Rejected == 1 && len(sum.Errors) == 1 && sum.Errors[0].Index == 1 &&
			sum.Errors[0].Code == "INVALID_ARGUMENT" && len(sum.Ids) == 2, "summary %v", sum)
	}
}

func checkErrors(ctx context.Context, c *msclient.Client, r *report) {
	_, err := c.Upsert(ctx, &pb.Memory{Type: pb.MemoryType_MEMORY_TYPE_FACT, Content: " "})
	e, isErr := err.(*msclient.Error)
	r.check("UpsertMemory blank content is INVALID_ARGUMENT naming the field", isErr &&
		e.Code == codes.InvalidArgument && e.Field == "memory.content" && e.Reason != "", "err %v", err)
	_, err = c.Get(ctx, "no-such-memory")
	r.check("GetMemory unknown id is NOT_FOUND", msclient.CodeOf(err) == codes.NotFound, "err %v", err)
}

func checkForget(ctx context.Context, c *msclient.Client, r *report) {
	stored, err := c.Upsert(ctx, withAgent(forgottenSeed))
	if !r.called("UpsertMemory", err) {
		return
	}
	forgottenID = stored.Memory.Id
	first, err := c.Forget(ctx, forgottenID, "go-example")
	if !r.called("ForgetMemory", err) {
		return
	}
	again, err := c.Forget(ctx, forgottenID, "go-example")
	if r.called("ForgetMemory", err) {
		r.check("ForgetMemory is a soft, idempotent delete", first.Changed && first.Memory.Forgotten &&
			!again.Changed && again.Memory.Forgotten, "first %v again %v", first, again)
	}
}

func checkSearch(ctx context.Context, c *msclient.Client, r *report) {
	res, err := c.Search(ctx, &pb.SearchRequest{Query: "which database does billing use", AgentId: agent, Limit: 3})
	if !r.called("Search", err) {
		return
	}
	r.check("Search ranks the PostgreSQL decision first", len(res.Hits) > 0 && res.Hits[0].Memory.Id == seedIDs[0],
		"hits %v", res.Hits)
	for _, h := range res.Hits {
		if h.Memory.Id == forgottenID {
			r.check("Search never returns a forgotten memory", false, "hit %v", h)
		}
	}
}

func withAgent(m *pb.Memory) *pb.Memory {
	m.AgentId = agent
	return m
}
