package main

import (
	"context"
	"fmt"
	"os"
	"time"

	pb "memsidecar/gen/memsidecarv1"
	"memsidecar/msclient"
)

var benchTexts = []string{
	"Which database did we pick for the billing service?",
	"How do we deploy to the Kubernetes cluster on Fridays?",
	"Remind me what the user prefers in answers.",
	"What do we need to do before the March release?",
	"Is there anything about authentication tokens I should know?",
	"Summarise the decisions about the storage layer.",
	"What are our goals for the v2 API?",
	"Who is on call this week and how do I reach them?",
}

const benchWarmup = 10

// runBench times n sequential Inject calls, each on a fresh channel so every call runs
// the full pipeline (no channel-state dedup), after a short warm-up.
func runBench(c *msclient.Client, r *report, n int) {
	ctx := context.Background()
	run := fmt.Sprintf("bench-%d", os.Getpid())
	samples := make([]time.Duration, 0, n)
	for i := 0; i < n+benchWarmup; i++ {
		req := &pb.InjectRequest{AgentId: agent, ChannelId: fmt.Sprintf("%s-%d", run, i),
			Text: benchTexts[i%len(benchTexts)], Source: "go-bench"}
		start := time.Now()
		_, err := c.Inject(ctx, req)
		elapsed := time.Since(start)
		if !r.called("Inject", err) {
			return
		}
		if i >= benchWarmup {
			samples = append(samples, elapsed)
		}
	}
	var total time.Duration
	for _, s := range samples {
		total += s
	}
	r.check(fmt.Sprintf("bench %d sequential Inject calls", n), len(samples) == n, "got %d samples", len(samples))
	fmt.Printf("bench inject n=%d p50_us=%d p99_us=%d mean_us=%d max_us=%d\n", n,
		msclient.Percentile(samples, 50).Microseconds(), msclient.Percentile(samples, 99).Microseconds(),
		(total / time.Duration(len(samples))).Microseconds(), msclient.Percentile(samples, 100).Microseconds())
}
