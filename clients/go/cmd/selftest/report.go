package main

import "fmt"

// report prints one line per check and decides the exit code.
type report struct{ ok, failed int }

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
func (r *report) called(rpc string, err error) bool {
	if err == nil {
		return true
	}
	r.check(rpc, false, "%v", err)
	return false
}

func (r *report) finish() int {
	fmt.Printf("summary: %d ok, %d failed\n", r.ok, r.failed)
	if r.failed > 0 {
		return 1
	}
	return 0
}
