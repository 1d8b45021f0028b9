// Command agent-loop is a template for a Go agent using memsidecar: copy it into your agent.
//
// Each line read from stdin is one user turn: PruneHistory (with the channel, keeping 3
// blocks) drops the oldest memory blocks and tells the sidecar which memories the model no
// longer sees; Inject returns the block for this turn; the block goes into the history before
// the user's message; llm(history) answers; the answer is appended. Each turn's block is
// printed.
//
//	agent-loop --addr 127.0.0.1:50051 --channel demo --user alice < questions.txt
//
// Every Inject names the end user (--user): the block may hold that user's private memories
// and never another user's, and a turn the sidecar captures belongs to that user.
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	pb "github.com/memsidecar/memsidecar/clients/go/memsidecarv1"
	"github.com/memsidecar/memsidecar/clients/go/msclient"
)

// maxBlocks is how many memory blocks the history keeps, the incoming one included.
const maxBlocks = 3

func main() {
	addr := flag.String("addr", "127.0.0.1:50051", "sidecar address HOST:PORT, unix:PATH or unix:///PATH")
	channel := flag.String("channel", "agent-loop", "conversation (channel) id")
	agent := flag.String("agent", "agent-loop-example", "agent id owning the seeded memories")
	user := flag.String("user", "", "end user id sent with every Inject (empty: not known; the turns captured then stay private to the channel)")
	token := flag.String("token", "", "bearer token sent with every call")
	wait := flag.Float64("wait", 30, "seconds to wait for the sidecar to be ready")
	ca := flag.String("ca", "", "CA certificate (PEM) of a TLS sidecar; plaintext without it")
	flag.Parse()
	options, err := dialOptions(*agent, *token, *ca)
	if err == nil {
		err = run(*addr, *channel, *agent, *user, options, time.Duration(*wait*float64(time.Second)))
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "agent-loop: %v\n", err)
		os.Exit(1)
	}
}

// dialOptions: the agent, the token, TLS when a CA file is given, and WithDialTimeout(0)
// (connect in the background; WaitReady waits for a starting sidecar).
func dialOptions(agent, token, ca string) ([]msclient.Option, error) {
	options := []msclient.Option{msclient.WithAgent(agent), msclient.WithToken(token),
		msclient.WithDialTimeout(0)}
	if ca == "" {
		return options, nil
	}
	pem, err := os.ReadFile(ca)
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--ca %s: no PEM certificate found", ca)
	}
	return append(options, msclient.WithTLS(&tls.Config{RootCAs: roots})), nil
}

func run(addr, channel, agent, user string, options []msclient.Option, wait time.Duration) error {
	client, err := msclient.Dial(addr, options...)
	if err != nil {
		return fmt.Errorf("cannot reach the sidecar at %s: %v", addr, err)
	}
	defer client.Close()
	ctx := context.Background()
	if err := client.WaitReady(ctx, wait); err != nil {
		return fmt.Errorf("cannot reach the sidecar at %s: %v", addr, err)
	}
	if err := seed(ctx, client, agent); err != nil {
		return err
	}
	// A new conversation: forget what the sidecar injected earlier on this channel.
	if _, err := client.ResetChannel(ctx, channel); err != nil {
		return err
	}
	history := []*pb.Message{{Role: pb.Role_ROLE_SYSTEM, Content: "You are a helpful engineering agent."}}
	lines := bufio.NewScanner(os.Stdin)
	for turn := 1; lines.Scan(); turn++ {
		if history, err = step(ctx, client, agent, channel, user, history, lines.Text(), turn); err != nil {
			return err
		}
	}
	return lines.Err()
}

// step runs one turn and returns the grown history.
func step(ctx context.Context, c *msclient.Client, agent, channel, user string, history []*pb.Message,
	text string, turn int) ([]*pb.Message, error) {
	pruned, err := c.PruneHistory(ctx, channel, history, maxBlocks)
	if err != nil {
		return nil, err
	}
	history = pruned.Messages
	injected, err := c.Inject(ctx, &pb.InjectRequest{AgentId: agent, ChannelId: channel, UserId: user, Text: text,
		Source: "user"})
	if err != nil {
		return nil, err
	}
	fmt.Printf("--- turn %d\n", turn)
	fmt.Printf("released turns: %s\n", turns(pruned.ReleasedTurns))
	if injected.Block != "" {
		history = append(history, &pb.Message{Role: pb.Role_ROLE_USER, Content: injected.Block})
		fmt.Println(injected.Block)
	} else {
		fmt.Printf("(no memory block: %s)\n", injected.SkipReason)
	}
	history = append(history, &pb.Message{Role: pb.Role_ROLE_USER, Content: text})
	reply := llm(history)
	fmt.Printf("assistant: %s\n", reply)
	return append(history, &pb.Message{Role: pb.Role_ROLE_ASSISTANT, Content: reply}), nil
}

// turns lists the turns of released blocks ("-" for none).
func turns(released []uint64) string {
	if len(released) == 0 {
		return "-"
	}
	out := make([]string, len(released))
	for i, t := range released {
		out[i] = strconv.FormatUint(t, 10)
	}
	return strings.Join(out, ",")
}
