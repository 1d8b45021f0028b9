package msclient

import (
	"context"

	pb "github.com/memsidecar/memsidecar/clients/go/memsidecarv1"
)

// PromoteToCanon turns a REGISTER memory into CANON.
func (c *Client) PromoteToCanon(ctx context.Context, req *pb.PromoteToCanonRequest) (*pb.PromoteToCanonResponse, error) {
	return unary(c, ctx, req, c.Vault.PromoteToCanon)
}

// GetMemoryHistory returns the latest req.Limit recorded versions of a memory (0 = 100, at
// most 1000), oldest first; TotalVersions says how many there are in all.
func (c *Client) GetMemoryHistory(ctx context.Context, req *pb.GetMemoryHistoryRequest) (*pb.GetMemoryHistoryResponse, error) {
	return unary(c, ctx, req, c.Vault.GetMemoryHistory)
}

// GetSnapshot returns the always-injected block of an agent.
func (c *Client) GetSnapshot(ctx context.Context, agentID string) (*pb.GetSnapshotResponse, error) {
	return unary(c, ctx, &pb.GetSnapshotRequest{AgentId: agentID}, c.Vault.GetSnapshot)
}

// FindConsolidationCandidates lists pairs of similar live memories of one scope.
func (c *Client) FindConsolidationCandidates(ctx context.Context, req *pb.FindConsolidationCandidatesRequest) (*pb.FindConsolidationCandidatesResponse, error) {
	return unary(c, ctx, req, c.Vault.FindConsolidationCandidates)
}

// ProposeDeletions lists memories that could be forgotten, each with a reason.
func (c *Client) ProposeDeletions(ctx context.Context, req *pb.ProposeDeletionsRequest) (*pb.ProposeDeletionsResponse, error) {
	return unary(c, ctx, req, c.Vault.ProposeDeletions)
}

// VaultStats returns the store-wide counts and the first page of per-scope counts (100 scopes).
func (c *Client) VaultStats(ctx context.Context) (*pb.VaultStatsResponse, error) {
	return unary(c, ctx, &pb.VaultStatsRequest{}, c.Vault.VaultStats)
}

// VaultStatsPage returns the store-wide counts and one page of per-scope counts: req.PageSize
// scopes (0 = 100, at most 1000) after req.PageToken (the previous reply's NextPageToken, or
// empty for the first page). NextPageToken is empty on the last page.
func (c *Client) VaultStatsPage(ctx context.Context, req *pb.VaultStatsRequest) (*pb.VaultStatsResponse, error) {
	return unary(c, ctx, req, c.Vault.VaultStats)
}
