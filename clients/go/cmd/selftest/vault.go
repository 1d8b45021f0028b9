package main

import (
	"strings"

	pb "github.com/memsidecar/memsidecar/clients/go/memsidecarv1"
)

const canonText = "Mission: keep the billing service on PostgreSQL and ship the v2 API by June."

func (s *session) runSettings() {
	limit := uint32(7)
	set, err := s.c.UpdateConfig(s.ctx, &pb.UpdateConfigRequest{AgentId: s.agent,
		MemoryInjection: &pb.MemoryInjectionConfig{SearchLimit: &limit}})
	if !s.called("UpdateConfig", err) {
		return
	}
	got, err := s.c.GetConfig(s.ctx, s.agent)
	if s.called("GetConfig", err) {
		s.check("UpdateConfig overrides one agent's search_limit", set.MemoryInjectionOverridden &&
			got.MemoryInjection.GetSearchLimit() == limit, "set %v got %v", set, got)
	}
	back, err := s.c.UpdateConfig(s.ctx, &pb.UpdateConfigRequest{AgentId: s.agent, ResetMemoryInjectionOverride: true})
	if s.called("UpdateConfig", err) {
		s.check("UpdateConfig reset drops the override", !back.MemoryInjectionOverridden, "reply %v", back)
	}
}

func (s *session) runVault() {
	reg, ok := s.upsert(&pb.Memory{Type: pb.MemoryType_MEMORY_TYPE_GOAL, Tier: pb.Tier_TIER_REGISTER,
		TopicId: "mission", Content: "Mission draft: billing on PostgreSQL."})
	if !ok {
		return
	}
	promoted, err := s.c.PromoteToCanon(s.ctx, &pb.PromoteToCanonRequest{Id: reg.Memory.Id, CanonicalText: canonText,
		AgentId: s.agent})
	if !s.called("PromoteToCanon", err) {
		return
	}
	s.check("PromoteToCanon makes a CANON version 2", promoted.Memory.Tier == pb.Tier_TIER_CANON &&
		promoted.Memory.Version == 2, "memory %v", promoted.Memory)
	history, err := s.c.GetMemoryHistory(s.ctx, &pb.GetMemoryHistoryRequest{Id: reg.Memory.Id, AgentId: s.agent})
	if s.called("GetMemoryHistory", err) {
		v := history.Versions
		s.check("GetMemoryHistory records create then promote", len(v) == 2 &&
			v[0].Event == pb.VersionEvent_VERSION_EVENT_CREATE && v[1].Event == pb.VersionEvent_VERSION_EVENT_PROMOTE, "versions %v", v)
	}
	snap, err := s.c.GetSnapshot(s.ctx, s.agent)
	if s.called("GetSnapshot", err) {
		s.check("GetSnapshot holds the canon text", strings.Contains(snap.Text, canonText), "text %q", snap.Text)
	}
	s.checkHygiene()
}

func (s *session) checkHygiene() {
	var mine *pb.ScopeCount
	req := &pb.VaultStatsRequest{PageSize: 1000}
	for {
		stats, err := s.c.VaultStatsPage(s.ctx, req)
		if !s.called("VaultStats", err) {
			break
		}
		for _, sc := range stats.Scopes {
			if sc.AgentId == s.agent {
				mine = sc
			}
		}
		if stats.NextPageToken == "" {
			s.check("VaultStats counts this agent's memories", mine != nil && mine.Canon >= 1 && mine.Registers == 0 &&
				mine.Live >= uint64(len(seeds)), "scope %v", mine)
			break
		}
		req.PageToken = stats.NextPageToken
	}
	_, err := s.c.FindConsolidationCandidates(s.ctx, &pb.FindConsolidationCandidatesRequest{Scope: s.agent})
	s.called("FindConsolidationCandidates", err)
	_, err = s.c.ProposeDeletions(s.ctx, &pb.ProposeDeletionsRequest{Scope: s.agent})
	s.called("ProposeDeletions", err)
}
