// Command bench times N sequential Inject calls against a running sidecar and prints
// "bench inject n=N p50_us=.. p99_us=.. mean_us=.. max_us=..": the latency suite's Go client.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/memsidecar/memsidecar/clients/go/msclient"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:50051", "sidecar address HOST:PORT, unix:PATH or unix:///PATH")
	n := flag.Int("bench", 1000, "number of timed sequential Inject calls")
	agent := flag.String("agent", "agent-a", "agent id of the Inject calls")
	queriesFile := flag.String("queries", "", "file with one query per line (default: built-in queries)")
	timeout := flag.Duration("timeout", 10*time.Second, "connect timeout and per-call deadline")
	flag.Parse()

	queries, err := readQueries(*queriesFile)
	if err != nil || *n < 1 {
		fmt.Printf("FAIL arguments: -bench %d, %v\n", *n, err)
		os.Exit(2)
	}
	client, err := msclient.Dial(*addr, msclient.WithDialTimeout(*timeout), msclient.WithTimeout(*timeout))
	if err != nil {
		fmt.Printf("FAIL connect %s: %v\n", *addr, err)
		os.Exit(1)
	}
	defer client.Close()
	if err := runBench(client, *n, *agent, queries); err != nil {
		fmt.Printf("FAIL Inject: %v\n", err)
		client.Close()
		os.Exit(1)
	}
}
