package main

import (
	"context"
	_ "embed"
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"

	pb "github.com/memsidecar/memsidecar/clients/go/memsidecarv1"
	"github.com/memsidecar/memsidecar/clients/go/msclient"
)

// seedFile holds the example memories, shared with the Rust and Python templates: one
// "id<TAB>type<TAB>content" line each. Fixed ids: seeding twice stores nothing new.
//
//go:embed seeds.tsv
var seedFile string

// seeds parses seedFile ('#' lines are comments).
func seeds() ([]*pb.Memory, error) {
	var out []*pb.Memory
	for _, line := range strings.Split(seedFile, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.SplitN(line, "\t", 3)
		if len(fields) != 3 {
			return nil, fmt.Errorf("seeds.tsv: expected id, type and content in %q", line)
		}
		kind, ok := pb.MemoryType_value["MEMORY_TYPE_"+strings.ToUpper(fields[1])]
		if !ok {
			return nil, fmt.Errorf("seeds.tsv: unknown memory type %q", fields[1])
		}
		out = append(out, &pb.Memory{Id: fields[0], Type: pb.MemoryType(kind), Content: fields[2]})
	}
	return out, nil
}

// seed stores each example memory that the store does not hold yet.
func seed(ctx context.Context, c *msclient.Client, agent string) error {
	memories, err := seeds()
	if err != nil {
		return err
	}
	for _, m := range memories {
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
