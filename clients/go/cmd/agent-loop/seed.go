package main

import (
	"context"

	"google.golang.org/grpc/codes"

	pb "github.com/memsidecar/memsidecar/clients/go/memsidecarv1"
	"github.com/memsidecar/memsidecar/clients/go/msclient"
)

// seeds are example memories with fixed ids: seeding twice stores nothing new.
var seeds = []*pb.Memory{
	{Id: "agent-loop-example-db", Type: pb.MemoryType_MEMORY_TYPE_DECISION,
		Content: "We chose PostgreSQL 16 as the primary database for the billing service."},
	{Id: "agent-loop-example-deploy", Type: pb.MemoryType_MEMORY_TYPE_FACT,
		Content: "The deploy pipeline ships to the Kubernetes cluster every Friday."},
	{Id: "agent-loop-example-style", Type: pb.MemoryType_MEMORY_TYPE_PREFERENCE,
		Content: "The user prefers short answers with Go code examples."},
}

// seed stores each example memory that the store does not hold yet.
func seed(ctx context.Context, c *msclient.Client, agent string) error {
	for _, m := range seeds {
		_, err := c.Get(ctx, m.Id)
		if err == nil {
			continue
		}
		if msclient.CodeOf(err) != codes.NotFound {
			return err
		}
		m.AgentId = agent
		if _, err := c.Upsert(ctx, m); err != nil {
			return err
		}
	}
	return nil
}
