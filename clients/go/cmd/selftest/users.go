package main

import (
	"strings"

	"google.golang.org/grpc/codes"

	pb "github.com/memsidecar/memsidecar/clients/go/memsidecarv1"
	"github.com/memsidecar/memsidecar/clients/go/msclient"
)

// The end users of the run's agent: one memory is private to alice; bob must never see it.
const (
	alice       = "alice"
	bob         = "bob"
	privateText = "Alice's dog is called Giruruka and sleeps under her desk."
	privateAsk  = "What is the name of Alice's dog?"
)

// runUsers checks user_id on a memory, Search, Inject and the ListMemories filter, then
// ForgetUser and ForgetMemory's hard mode. Its memories are erased here, not by cleanUp.
func (s *session) runUsers() {
	stored, err := s.c.Upsert(s.ctx, &pb.Memory{Type: pb.MemoryType_MEMORY_TYPE_FACT, Content: privateText,
		AgentId: s.agent, UserId: alice})
	if !s.called("UpsertMemory with a user", err) {
		return
	}
	id := stored.Memory.Id
	s.check("UpsertMemory keeps the user", stored.Memory.UserId == alice, "reply %v", stored)
	page, err := s.c.List(s.ctx, &pb.ListMemoriesRequest{AgentId: s.agent, UserId: alice, PageSize: 100})
	if s.called("ListMemories by user", err) {
		s.check("ListMemories filters by user", len(page.Memories) == 1 && page.Memories[0].Id == id,
			"got %v", page.Memories)
	}
	s.check("Search as the user finds their memory", s.searchFinds(alice, id), "as %s", alice)
	s.check("Search as another user does not", !s.searchFinds(bob, id), "as %s", bob)
	s.check("Search without a user does not", !s.searchFinds("", id), "without a user")
	s.check("Inject as the user offers their memory", s.injectShows(alice), "as %s", alice)
	s.check("Inject as another user does not", !s.injectShows(bob), "as %s", bob)
	s.checkForgetUser(id)
	s.checkForgetHard()
}

// searchFinds: does a Search as user (empty: none) return memory id?
func (s *session) searchFinds(user, id string) bool {
	res, err := s.c.Search(s.ctx, &pb.SearchRequest{Query: privateAsk, AgentId: s.agent, UserId: user, Limit: 10})
	if !s.called("Search with a user", err) {
		return false
	}
	for _, h := range res.Hits {
		if h.Memory.Id == id {
			return true
		}
	}
	return false
}

// injectShows: does the block of a first turn by user, on a channel of their own, hold the
// private memory?
func (s *session) injectShows(user string) bool {
	reply, err := s.c.Inject(s.ctx, &pb.InjectRequest{AgentId: s.agent, ChannelId: s.channel + "-" + user,
		UserId: user, Text: privateAsk})
	return s.called("Inject with a user", err) && strings.Contains(reply.Block, "Giruruka")
}

// checkForgetUser: ForgetUser erases every memory of the user, the one stored above and,
// on a sidecar with capture on, the turns captured from the user's Inject calls (written in
// the background: more may be written between the listing and the erasure, never fewer).
func (s *session) checkForgetUser(id string) {
	before := s.userMemories(alice)
	first, err := s.c.ForgetUser(s.ctx, s.agent, alice)
	if !s.called("ForgetUser", err) {
		return
	}
	s.check("ForgetUser erases the user's memories", hasID(before, id) &&
		first.Memories >= uint32(len(before)) && first.Versions >= first.Memories,
		"reply %v; %d listed before, the stored one among them: %v", first, len(before), hasID(before, id))
	left := s.userMemories(alice)
	s.check("ForgetUser leaves no memory of the user, captured ones included", len(left) == 0,
		"still listed: %v", left)
	again, err := s.c.ForgetUser(s.ctx, s.agent, alice)
	if s.called("ForgetUser again", err) {
		s.check("ForgetUser a second time erases nothing", again.Memories == 0 && again.Versions == 0 &&
			again.Edges == 0 && again.Captures == 0 && again.Channels == 0, "reply %v", again)
	}
}

func (s *session) checkForgetHard() {
	stored, err := s.c.Upsert(s.ctx, &pb.Memory{Type: pb.MemoryType_MEMORY_TYPE_FACT, AgentId: s.agent,
		Content: "The hard-forget check's memory: the lobby plant is a ficus."})
	if !s.called("UpsertMemory", err) {
		return
	}
	_, err = s.c.ForgetHard(s.ctx, stored.Memory.Id, "go-selftest")
	if s.called("ForgetMemory hard", err) {
		s.check("ForgetMemory hard leaves no forgotten copy", !s.listed(stored.Memory.Id), "%s still listed",
			stored.Memory.Id)
		_, err = s.c.Get(s.ctx, stored.Memory.Id)
		s.check("GetMemory of an erased memory is NOT_FOUND", msclient.CodeOf(err) == codes.NotFound, "err %v", err)
	}
}

// userMemories: the ids of the user's memories, forgotten ones included.
func (s *session) userMemories(user string) []string {
	page, err := s.c.List(s.ctx, &pb.ListMemoriesRequest{AgentId: s.agent, UserId: user, IncludeForgotten: true,
		PageSize: 1000})
	if !s.called("ListMemories by user", err) {
		return nil
	}
	ids := []string{}
	for _, m := range page.Memories {
		ids = append(ids, m.Id)
	}
	return ids
}

func hasID(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// listed: does ListMemories, forgotten ones included, still hold memory id?
func (s *session) listed(id string) bool {
	page, err := s.c.List(s.ctx, &pb.ListMemoriesRequest{AgentId: s.agent, IncludeForgotten: true, PageSize: 1000})
	if !s.called("ListMemories", err) {
		return true
	}
	for _, m := range page.Memories {
		if m.Id == id {
			return true
		}
	}
	return false
}
