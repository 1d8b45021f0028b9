package msclient

import (
	"context"

	"google.golang.org/grpc"

	pb "memsidecar/gen/memsidecarv1"
)

// Upsert stores a memory (empty id = new, server-generated id).
func (c *Client) Upsert(ctx context.Context, m *pb.Memory) (out *pb.UpsertMemoryResponse, err error) {
	err = c.call(ctx, func(ctx context.Context, o ...grpc.CallOption) (e error) {
		out, e = c.Store.UpsertMemory(ctx, &pb.UpsertMemoryRequest{Memory: m}, o...)
		return
	})
	return
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
func (c *Client) Get(ctx context.Context, id string) (out *pb.Memory, err error) {
	err = c.call(ctx, func(ctx context.Context, o ...grpc.CallOption) (e error) {
		out, e = c.Store.GetMemory(ctx, &pb.GetMemoryRequest{Id: id}, o...)
		return
	})
	return
}

// Forget soft-deletes a memory (idempotent).
func (c *Client) Forget(ctx context.Context, id, source string) (out *pb.ForgetMemoryResponse, err error) {
	err = c.call(ctx, func(ctx context.Context, o ...grpc.CallOption) (e error) {
		out, e = c.Store.ForgetMemory(ctx, &pb.ForgetMemoryRequest{Id: id, Source: source}, o...)
		return
	})
	return
}

// List returns one page of memories.
func (c *Client) List(ctx context.Context, req *pb.ListMemoriesRequest) (out *pb.ListMemoriesResponse, err error) {
	err = c.call(ctx, func(ctx context.Context, o ...grpc.CallOption) (e error) {
		out, e = c.Store.ListMemories(ctx, req, o...)
		return
	})
	return
}

// AddEdge adds (or re-weights) an edge between two memories.
func (c *Client) AddEdge(ctx context.Context, edge *pb.Edge) (out *pb.Edge, err error) {
	err = c.call(ctx, func(ctx context.Context, o ...grpc.CallOption) (e error) {
		out, e = c.Store.AddEdge(ctx, &pb.AddEdgeRequest{Edge: edge}, o...)
		return
	})
	return
}

// RemoveEdge removes an edge; NOT_FOUND when it does not exist.
func (c *Client) RemoveEdge(ctx context.Context, source, target string, rel pb.Relation) error {
	return c.call(ctx, func(ctx context.Context, o ...grpc.CallOption) error {
		_, e := c.Store.RemoveEdge(ctx, &pb.RemoveEdgeRequest{SourceId: source, TargetId: target, Relation: rel}, o...)
		return e
	})
}

// Search runs a hybrid search.
func (c *Client) Search(ctx context.Context, req *pb.SearchRequest) (out *pb.SearchResponse, err error) {
	err = c.call(ctx, func(ctx context.Context, o ...grpc.CallOption) (e error) {
		out, e = c.Store.Search(ctx, req, o...)
		return
	})
	return
}
