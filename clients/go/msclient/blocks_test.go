package msclient

import (
	"testing"

	pb "github.com/memsidecar/memsidecar/clients/go/memsidecarv1"
)

func TestCountBlocksOnlyUserMessagesWithPrefix(t *testing.T) {
	history := []*pb.Message{
		{Role: pb.Role_ROLE_USER, Content: BlockPrefix + "\n[Fact] x"},
		{Role: pb.Role_ROLE_ASSISTANT, Content: BlockPrefix + " quoted by the assistant"},
		{Role: pb.Role_ROLE_USER, Content: "hello " + BlockPrefix},
		{Role: pb.Role_ROLE_USER, Content: BlockPrefix},
	}
	if got := CountBlocks(history); got != 2 {
		t.Fatalf("CountBlocks = %d, want 2", got)
	}
}
