// Command agent-example is the channel-turn loop a Go agent runs against memsidecar.
//
// It seeds a few memories and exercises the MemoryStore, then for each user turn calls
// PruneHistory, Inject, appends the block to its history, and finally RenderTranscript.
// Each check prints one line ("ok", "FAIL", or "PENDING" when the server answers
// UNIMPLEMENTED). Exit code: 0 every reply as expected, 1 a reply was wrong or a call
// failed, 3 nothing wrong but some RPCs are not implemented by this server yet.
//
// With -bench N it instead times N sequential Inject calls and prints p50/p99.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"memsidecar/msclient"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:50051", "sidecar address HOST:PORT")
	bench := flag.Int("bench", 0, "time N sequential Inject calls instead of the example loop")
	timeout := flag.Duration("timeout", 10*time.Second, "connect timeout and per-call deadline")
	flag.Parse()

	client, err := msclient.Dial(*addr, *timeout)
	if err != nil {
		fmt.Printf("FAIL connect %s: %v\n", *addr, err)
		os.Exit(1)
	}
	defer client.Close()
	client.Timeout = *timeout

	r := newReport()
	if *bench > 0 {
		runBench(client, r, *bench)
	} else {
		runStore(client, r)
		runTurns(client, r)
	}
	os.Exit(r.finish())
}
