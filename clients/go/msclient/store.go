package msclient

import (
	"context"

	"google.golang.org/grpc"

	pb "github.com/memsidecar/memsidecar/clients/go/memsidecarv1"
)

// Upsert stores a memory (empty id = new, server-generated id).
func (c *Client) Upsert(ctx context.Context, m *pb.Memory) (*pb.UpsertMemoryResponse, error) {
	return unary(c, ctx, &pb.UpsertMemoryRequest{Memory: m}, c.Store.UpsertMemory)
}

// Import streams memories in one ImportMemories call and returns its summary.
func (c *Client) Import(ctx context.Context, items []*pb.Memory) (out *pb.ImportMemoriesResponse, err error) {
	err = c.call(ctx, func(ctx context.Context, o ...grpc.CallOption) error {
		stream, e := c.Store.ImportMemories(ctx, o...)
		if e != nil {
			return e
		}
		for _, m := range items {
			if e = stream.Send(&pb.UpsertMemoryRequest{Memory: m}); e != nil {
				break // the real error comes from CloseAndRecv
			}
		}
		out, e = stream.CloseAndRecv()
		return e
	})
	return
}

// Get fetches one memory by id.
func (c *Client) Get(ctx context.Context, id string) (*pb.Memory, error) {
	return unary(c, ctx, &pb.GetMemoryRequest{Id: id, AgentId: c.Agent}, c.Store.GetMemory)
}

// Forget soft-deletes a memory (idempotent).
func (c *Client) Forget(ctx context.Context, id, source string) (*pb.ForgetMemoryResponse, error) {
	return unary(c, ctx, &pb.ForgetMemoryRequest{Id: id, Source: source, AgentId: c.Agent}, c.Store.ForgetMemory)
}

// ForgetHard erases a memory for good (ForgetMemory's hard mode): its versions and edges
// too, and the bytes leave the disk.
func (c *Client) ForgetHard(ctx context.Context, id, source string) (*pb.ForgetMemoryResponse, error) {
	return unary(c, ctx, &pb.ForgetMemoryRequest{Id: id, Source: source, AgentId: c.Agent, Hard: true},
		c.Store.ForgetMemory)
}

// ForgetUser erases end user `user` of agent `agent` for good: their memories with every
// version and edge, their captures, and the state of the channels they spoke in. It returns
// what went, counted; a second call erases nothing.
func (c *Client) ForgetUser(ctx context.Context, agent, user string) (*pb.ForgetUserResponse, error) {
	return unary(c, ctx, &pb.ForgetUserRequest{AgentId: agent, UserId: user}, c.Store.ForgetUser)
}

// List returns one page of memories.
func (c *Client) List(ctx context.Context, req *pb.ListMemoriesRequest) (*pb.ListMemoriesResponse, error) {
	return unary(c, ctx, req, c.Store.ListMemories)
}

// AddEdge adds (or re-weights) an edge between two memories.
func (c *Client) AddEdge(ctx context.Context, edge *pb.Edge) (*pb.Edge, error) {
	return unary(c, ctx, &pb.AddEdgeRequest{Edge: edge, AgentId: c.Agent}, c.Store.AddEdge)
}

// RemoveEdge removes an edge; NOT_FOUND when it does not exist.
func (c *Client) RemoveEdge(ctx context.Context, source, target string, rel pb.Relation) error {
	_, err := unary(c, ctx, &pb.RemoveEdgeRequest{SourceId: source, TargetId: target, Relation: rel,
		AgentId: c.Agent},
		c.Store.RemoveEdge)
	return err
}

// Search runs a hybrid search.
func (c *Client) Search(ctx context.Context, req *pb.SearchRequest) (*pb.SearchResponse, error) {
	return unary(c, ctx, req, c.Store.Search)
}
