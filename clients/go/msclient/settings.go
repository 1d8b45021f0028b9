package msclient

import (
	"context"

	pb "github.com/memsidecar/memsidecar/clients/go/memsidecarv1"
)

// GetConfig returns the effective injection settings of an agent ("" = the defaults).
func (c *Client) GetConfig(ctx context.Context, agentID string) (*pb.GetConfigResponse, error) {
	return unary(c, ctx, &pb.GetConfigRequest{AgentId: agentID}, c.Settings.GetConfig)
}

// UpdateConfig changes the injection settings of an agent and returns the effective result.
func (c *Client) UpdateConfig(ctx context.Context, req *pb.UpdateConfigRequest) (*pb.GetConfigResponse, error) {
	return unary(c, ctx, req, c.Settings.UpdateConfig)
}
