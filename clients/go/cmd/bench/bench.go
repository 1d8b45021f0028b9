package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"time"

	pb "github.com/memsidecar/memsidecar/clients/go/memsidecarv1"
	"github.com/memsidecar/memsidecar/clients/go/msclient"
)

var defaultQueries = []string{
	"Which database did we pick for the billing service?",
	"How do we deploy to the Kubernetes cluster on Fridays?",
	"Remind me what the user prefers in answers.",
	"What do we need to do before the March release?",
}

const benchWarmup = 10

// readQueries returns one query per non-empty line of path ("" = the built-in queries).
func readQueries(path string) ([]string, error) {
	if path == "" {
		return defaultQueries, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	scan := bufio.NewScanner(f)
	for scan.Scan() {
		if line := scan.Text(); line != "" {
			out = append(out, line)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no query", path)
	}
	return out, scan.Err()
}

// runBench times n sequential Inject calls, each on a fresh channel so every call runs
// the full pipeline (no channel-state dedup), after a short warm-up.
func runBench(c *msclient.Client, n int, agent string, queries []string) error {
	ctx := context.Background()
	run := fmt.Sprintf("bench-go-%d", os.Getpid())
	client := make([]time.Duration, 0, n)
	server := make([]time.Duration, 0, n)
	for i := 0; i < n+benchWarmup; i++ {
		req := &pb.InjectRequest{AgentId: agent, ChannelId: fmt.Sprintf("%s-%d", run, i),
			Text: queries[i%len(queries)], Source: "go-bench"}
		start := time.Now()
		reply, err := c.Inject(ctx, req)
		elapsed := time.Since(start)
		if err != nil {
			return err
		}
		if i >= benchWarmup {
			client = append(client, elapsed)
			server = append(server, time.Duration(reply.GetStats().GetElapsedUs())*time.Microsecond)
		}
	}
	var total time.Duration
	for _, s := range client {
		total += s
	}
	fmt.Printf("bench inject n=%d p50_us=%d p99_us=%d mean_us=%d max_us=%d server_p50_us=%d\n", n,
		msclient.Percentile(client, 50).Microseconds(), msclient.Percentile(client, 99).Microseconds(),
		(total / time.Duration(n)).Microseconds(), msclient.Percentile(client, 100).Microseconds(),
		msclient.Percentile(server, 50).Microseconds())
	return nil
}
