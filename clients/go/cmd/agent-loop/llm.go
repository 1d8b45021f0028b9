package main

import (
	"fmt"

	pb "github.com/memsidecar/memsidecar/clients/go/memsidecarv1"
)

// llm stands in for your model: CALL YOUR LLM HERE with the whole history (memory blocks
// included). This stand-in echoes the last user message.
func llm(history []*pb.Message) string {
	return fmt.Sprintf("(echo) %s", history[len(history)-1].GetContent())
}
