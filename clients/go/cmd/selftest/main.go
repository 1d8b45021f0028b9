// Command selftest checks every memsidecar RPC from Go against a running sidecar.
//
// Each check prints one line ("ok" or "FAIL"); the exit code is 0 when every check holds.
// All memories it writes belong to an agent id unique to the run and are forgotten at the
// end, so it works on any store, any number of times.
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
	token := flag.String("token", "", "bearer token sent with every call")
	timeout := flag.Duration("timeout", 10*time.Second, "connect timeout and per-call deadline")
	flag.Parse()

	client, err := msclient.Dial(*addr, msclient.WithToken(*token),
		msclient.WithDialTimeout(*timeout), msclient.WithTimeout(*timeout))
	if err != nil {
		fmt.Fprintf(os.Stderr, "selftest: cannot reach the sidecar at %s: %v\n", *addr, err)
		os.Exit(2)
	}
	defer client.Close()

	s := newSession(client, fmt.Sprintf("go-selftest-%d", time.Now().UnixNano()))
	s.runStore()
	s.runTurns()
	s.runSettings()
	s.runVault()
	s.runUsers()
	s.cleanUp()
	code := s.finish()
	client.Close()
	os.Exit(code)
}
