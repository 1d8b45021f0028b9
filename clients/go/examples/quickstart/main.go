package main

import (
	"context"
	"fmt"
	"log"
	"os"

	pb "github.com/memsidecar/memsidecar/clients/go/memsidecarv1"
	"github.com/memsidecar/memsidecar/clients/go/msclient"
)

func main() {
	addr := "127.0.0.1:50051"
	if len(os.Args) > 1 {
		addr = os.Args[1]
	}
	c, err := msclient.Dial(addr) // options: msclient.WithToken, WithTLS, WithAgent, WithTimeout
	check(err)
	defer c.Close()
	ctx := context.Background()
	_, err = c.Upsert(ctx, &pb.Memory{Id: "quickstart-go", Type: pb.MemoryType_MEMORY_TYPE_DECISION,
		Content: "The Go quickstart keeps its notes in PostgreSQL."})
	check(err)
	_, err = c.ResetChannel(ctx, "quickstart-go") // a new conversation on this channel
	check(err)
	reply, err := c.Inject(ctx, &pb.InjectRequest{ChannelId: "quickstart-go",
		Text: "Where does the Go quickstart keep its notes?"})
	check(err)
	fmt.Println(reply.Block)
}

func check(err error) {
	if err != nil {
		log.Fatal(err) // a *msclient.Error carries Code, Message, Reason and Field
	}
}
