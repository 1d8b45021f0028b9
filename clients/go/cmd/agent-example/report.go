package main

import (
	"fmt"

	"memsidecar/msclient"
)

// report prints one line per check and decides the exit code.
type report struct {
	ok, failed    int
	unimplemented map[string]bool
}

func newReport() *report { return &report{unimplemented: map[string]bool{}} }

func (r *report) check(name string, cond bool, format string, args ...interface{}) bool {
	if cond {
		r.ok++
		fmt.Printf("ok      %s\n", name)
	} else {
		r.failed++
		fmt.Printf("FAIL    %s: %s\n", name, fmt.Sprintf(format, args...))
	}
	return cond
}

// called reports a call's error; false when the caller must not look at the reply.
// An UNIMPLEMENTED RPC is reported once as PENDING and skipped from then on.
func (r *report) called(rpc string, err error) bool {
	if err == nil {
		return true
	}
	if msclient.IsUnimplemented(err) {
		if !r.unimplemented[rpc] {
			r.unimplemented[rpc] = true
			fmt.Printf("PENDING %s: server returned UNIMPLEMENTED\n", rpc)
		}
		return false
	}
	r.check(rpc, false, "%v", err)
	return false
}

func (r *report) pending(rpc string) bool { return r.unimplemented[rpc] }

func (r *report) finish() int {
	fmt.Printf("summary: %d ok, %d failed, %d pending\n", r.ok, r.failed, len(r.unimplemented))
	switch {
	case r.failed > 0:
		return 1
	case len(r.unimplemented) > 0:
		return 3
	}
	return 0
}
