package main

import (
	"google.golang.org/grpc/codes"

	pb "github.com/memsidecar/memsidecar/clients/go/memsidecarv1"
	"github.com/memsidecar/memsidecar/clients/go/msclient"
)

// seeds are the memories the turns inject.
var seeds = []*pb.Memory{
	{Type: pb.MemoryType_MEMORY_TYPE_DECISION, Content: "We chose PostgreSQL 16 as the primary database for the billing service."},
	{Type: pb.MemoryType_MEMORY_TYPE_FACT, Content: "The deploy pipeline builds on every merge and ships to the Kubernetes cluster each Friday."},
	{Type: pb.MemoryType_MEMORY_TYPE_PREFERENCE, Content: "The user prefers short answers with Go code examples."},
	{Type: pb.MemoryType_MEMORY_TYPE_TODO, Content: "Rotate the JWT signing keys before the March release."},
}

const forgottenText = "The office cat is called Pixel and sleeps on the build server."

func (s *session) runStore() {
	for _, seed := range seeds {
		m := &pb.Memory{Type: seed.Type, Content: seed.Content}
		reply, ok := s.upsert(m)
		if !ok {
			return
		}
		s.check("UpsertMemory creates "+m.Type.String(), reply.Created && reply.Memory.Version == 1 &&
			len(reply.Memory.Id) == 36 && reply.Memory.Content == m.Content, "reply %v", reply)
		s.seedIDs = append(s.seedIDs, reply.Memory.Id)
	}
	s.checkUpdate()
	s.checkReads()
	s.checkEdges()
	s.checkImport()
	s.checkImportStream()
	s.checkErrors()
	s.checkForget()
	s.checkSearch()
}

func (s *session) checkUpdate() {
	event := func(text string) *pb.Memory {
		return &pb.Memory{Id: s.id("review"), Type: pb.MemoryType_MEMORY_TYPE_EVENT, Content: text}
	}
	first, ok := s.upsert(event("Sprint review notes, first draft."))
	if !ok {
		return
	}
	if second, ok := s.upsert(event("Sprint review notes, final version.")); ok {
		s.check("UpsertMemory with a fixed id updates in place", first.Created && !second.Created &&
			second.Memory.Version == 2 && second.Memory.Id == s.id("review"), "first %v second %v", first, second)
	}
}

func (s *session) checkReads() {
	got, err := s.c.Get(s.ctx, s.seedIDs[0])
	if s.called("GetMemory", err) {
		s.check("GetMemory returns the stored memory", got.Id == s.seedIDs[0] && got.Content == seeds[0].Content &&
			got.Importance != nil && *got.Importance > 0.79 && *got.Importance < 0.81, "got %v", got)
	}
	wanted := []pb.MemoryType{pb.MemoryType_MEMORY_TYPE_DECISION, pb.MemoryType_MEMORY_TYPE_TODO}
	page, err := s.c.List(s.ctx, &pb.ListMemoriesRequest{AgentId: s.agent, Types: wanted, PageSize: 1000})
	if !s.called("ListMemories", err) {
		return
	}
	found, onlyWanted := 0, true
	for _, m := range page.Memories {
		onlyWanted = onlyWanted && (m.Type == wanted[0] || m.Type == wanted[1])
		if m.Id == s.seedIDs[0] || m.Id == s.seedIDs[3] {
			found++
		}
	}
	s.check("ListMemories filters by type", onlyWanted && found == 2, "got %v", page.Memories)
}

func (s *session) checkEdges() {
	from, to := s.seedIDs[3], s.seedIDs[0]
	edge, err := s.c.AddEdge(s.ctx, &pb.Edge{SourceId: from, TargetId: to, Relation: pb.Relation_RELATION_RELATED_TO})
	if !s.called("AddEdge", err) {
		return
	}
	s.check("AddEdge default weight 0.5", edge.Weight != nil && *edge.Weight == 0.5 && edge.SourceId == from, "edge %v", edge)
	if s.called("RemoveEdge", s.c.RemoveEdge(s.ctx, from, to, pb.Relation_RELATION_RELATED_TO)) {
		err = s.c.RemoveEdge(s.ctx, from, to, pb.Relation_RELATION_RELATED_TO)
		s.check("RemoveEdge twice is NOT_FOUND", msclient.CodeOf(err) == codes.NotFound, "err %v", err)
	}
}

func (s *session) checkImport() {
	items := []*pb.Memory{
		{Type: pb.MemoryType_MEMORY_TYPE_OBSERVATION, Content: "Imported observation one.", AgentId: s.agent},
		{Type: pb.MemoryType_MEMORY_TYPE_OBSERVATION, Content: "   ", AgentId: s.agent},
		{Type: pb.MemoryType_MEMORY_TYPE_GOAL, Content: "Imported goal: ship the v2 API by June.", AgentId: s.agent},
	}
	sum, err := s.c.Import(s.ctx, items)
	if s.called("ImportMemories", err) {
		s.written = append(s.written, sum.Ids...)
		s.check("ImportMemories stores valid items, rejects the blank one", sum.Received == 3 && sum.Stored == 2 &&
			sum.Rejected == 1 && len(sum.Errors) == 1 && sum.Errors[0].Index == 1 &&
			sum.Errors[0].Code == "INVALID_ARGUMENT" && len(sum.Ids) == 2, "summary %v", sum)
	}
}

func (s *session) checkImportStream() {
	var items []*pb.ImportItem
	for i := 0; i < 3; i++ {
		items = append(items, &pb.ImportItem{Memory: &pb.Memory{Id: s.id("streamed-" + string(rune('a'+i))),
			Type: pb.MemoryType_MEMORY_TYPE_FACT, AgentId: s.agent,
			Content: "Streamed import fact " + string(rune('A'+i)) + ": the staging cluster is in zone " + string(rune('a'+i)) + "."}})
	}
	acks, err := s.c.ImportStream(s.ctx, items, 2, 1)
	if !s.called("ImportMemoriesStream", err) {
		return
	}
	for _, ack := range acks {
		s.written = append(s.written, ack.Ids...)
	}
	s.check("ImportMemoriesStream acknowledges each batch", len(acks) == 2 && acks[0].Sequence == 0 &&
		acks[1].Sequence == 1 && acks[0].Committed+acks[0].Deduplicated == 2 &&
		acks[1].Committed+acks[1].Deduplicated == 1, "acks %v", acks)
	again, err := s.c.ImportStream(s.ctx, items, 100, 0)
	if s.called("ImportMemoriesStream resend", err) {
		s.check("ImportMemoriesStream resend commits nothing twice", len(again) == 1 &&
			again[0].Committed == 0 && again[0].Deduplicated == 3, "acks %v", again)
	}
}

func (s *session) checkErrors() {
	_, err := s.c.Upsert(s.ctx, &pb.Memory{Type: pb.MemoryType_MEMORY_TYPE_FACT, Content: " "})
	e, isErr := err.(*msclient.Error)
	s.check("UpsertMemory blank content is INVALID_ARGUMENT naming the field", isErr &&
		e.Code == codes.InvalidArgument && e.Field == "memory.content" && e.Reason != "", "err %v", err)
	_, err = s.c.Get(s.ctx, s.id("no-such-memory"))
	s.check("GetMemory unknown id is NOT_FOUND", msclient.CodeOf(err) == codes.NotFound, "err %v", err)
}

func (s *session) checkForget() {
	stored, ok := s.upsert(&pb.Memory{Type: pb.MemoryType_MEMORY_TYPE_FACT, Content: forgottenText})
	if !ok {
		return
	}
	s.forgot = stored.Memory.Id
	first, err := s.c.Forget(s.ctx, s.forgot, "go-selftest")
	if !s.called("ForgetMemory", err) {
		return
	}
	again, err := s.c.Forget(s.ctx, s.forgot, "go-selftest")
	if s.called("ForgetMemory", err) {
		s.check("ForgetMemory is a soft, idempotent delete", first.Changed && first.Memory.Forgotten &&
			!again.Changed && again.Memory.Forgotten, "first %v again %v", first, again)
	}
}

func (s *session) checkSearch() {
	res, err := s.c.Search(s.ctx, &pb.SearchRequest{Query: "which database does billing use", AgentId: s.agent, Limit: 5})
	if !s.called("Search", err) {
		return
	}
	found, forgotten := false, false
	for _, h := range res.Hits {
		found = found || h.Memory.Id == s.seedIDs[0]
		forgotten = forgotten || h.Memory.Id == s.forgot
	}
	s.check("Search finds the PostgreSQL decision", found, "hits %v", res.Hits)
	s.check("Search never returns a forgotten memory", !forgotten, "hits %v", res.Hits)
}
