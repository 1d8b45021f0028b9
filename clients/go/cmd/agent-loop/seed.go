package main

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"strings"

	pb "github.com/memsidecar/memsidecar/clients/go/memsidecarv1"
	"github.com/memsidecar/memsidecar/clients/go/msclient"
)

// seedFile holds the example memories, shared with the Rust and Python templates: one
// "name<TAB>type<TAB>content" line each. A memory id names one memory of one agent, so each
// seed's id is AGENT:NAME; seeding twice stores nothing new.
//
//go:embed seeds.tsv
var seedFile string

// seeds parses seedFile ('#' lines are comments): the memories of agent.
func seeds(agent string) ([]*pb.Memory, error) {
	var out []*pb.Memory
	for _, line := range strings.Split(seedFile, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.SplitN(line, "\t", 3)
		if len(fields) != 3 {
			return nil, fmt.Errorf("seeds.tsv: expected name, type and content in %q", line)
		}
		kind, ok := pb.MemoryType_value["MEMORY_TYPE_"+strings.ToUpper(fields[1])]
		if !ok {
			return nil, fmt.Errorf("seeds.tsv: unknown memory type %q", fields[1])
		}
		out = append(out, &pb.Memory{Id: agent + ":" + fields[0], Type: pb.MemoryType(kind),
			Content: fields[2], AgentId: agent})
	}
	return out, nil
}

// seed imports the example memories over a streaming import: those already stored with the
// same fields count as deduplicated, so a second run stores nothing. Each rejected one is
// printed with the sidecar's reason.
func seed(ctx context.Context, c *msclient.Client, agent string) error {
	memories, err := seeds(agent)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx) // stops the sender when the import fails
	defer cancel()
	items := make(chan *pb.ImportItem)
	go func() {
		defer close(items)
		for _, m := range memories {
			select {
			case items <- &pb.ImportItem{Memory: m}:
			case <-ctx.Done():
				return
			}
		}
	}()
	summary, err := c.ImportChan(ctx, items, msclient.MaxImportBatch, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "seeded %d memories: %d stored, %d already there, %d rejected\n",
		summary.Received, summary.Stored, summary.Deduplicated, summary.Rejected)
	for _, e := range summary.Errors {
		name := strings.TrimPrefix(memories[e.Index].Id, agent+":")
		fmt.Fprintf(os.Stderr, "seed %s rejected: %s: %s\n", name, e.Code, e.Message)
	}
	return nil
}
