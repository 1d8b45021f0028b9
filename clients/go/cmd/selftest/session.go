package main

import (
	"context"

	pb "github.com/memsidecar/memsidecar/clients/go/memsidecarv1"
	"github.com/memsidecar/memsidecar/clients/go/msclient"
)

// session is one selftest run: its own agent id, channel and memory ids.
type session struct {
	report
	ctx     context.Context
	c       *msclient.Client
	agent   string
	channel string
	seedIDs []string // stored seeds, in seed order
	written []string // every memory the run stored, forgotten by cleanUp
	forgot  string   // the memory forgotten on purpose
}

func newSession(c *msclient.Client, run string) *session {
	c.Agent = run // Get, Forget, edges and ResetChannel act in this run's scope
	return &session{ctx: context.Background(), c: c, agent: run, channel: run + "-channel"}
}

// id is a fixed memory id inside this run's namespace.
func (s *session) id(name string) string { return s.agent + "-" + name }

func (s *session) upsert(m *pb.Memory) (*pb.UpsertMemoryResponse, bool) {
	m.AgentId = s.agent
	reply, err := s.c.Upsert(s.ctx, m)
	if !s.called("UpsertMemory", err) {
		return nil, false
	}
	s.written = append(s.written, reply.Memory.Id)
	return reply, true
}

// cleanUp forgets every memory the run stored.
func (s *session) cleanUp() {
	for _, id := range s.written {
		_, err := s.c.Forget(s.ctx, id, "go-selftest")
		s.called("ForgetMemory (clean-up)", err)
	}
}
