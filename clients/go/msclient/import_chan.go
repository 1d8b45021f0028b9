package msclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/memsidecar/memsidecar/clients/go/memsidecarv1"
)

// ImportProgress follows each acknowledged batch: items acknowledged so far, and the batch's
// acknowledgement.
type ImportProgress func(received uint32, ack *pb.ImportBatchAck)

// ImportChan imports the items received from a channel, until it is closed, in acknowledged
// batches of batchSize (1..100) over one ImportMemoriesStream call, reading the channel as
// batches go (one batch ahead of its acknowledgement). progress (may be nil) follows each
// acknowledgement. It returns the summary of the whole import; error indices count from the
// first item. A failed stream returns its error with the summary of what was acknowledged
// (the channel is not drained: let its sender also stop on a cancelled context); items with
// an id are not stored twice when sent again.
func (c *Client) ImportChan(ctx context.Context, items <-chan *pb.ImportItem, batchSize int,
	progress ImportProgress) (*pb.ImportMemoriesResponse, error) {
	if batchSize < 1 || batchSize > MaxImportBatch {
		return nil, &Error{Code: codes.InvalidArgument, Field: "batchSize",
			Message: fmt.Sprintf("batchSize must be 1..%d, got %d", MaxImportBatch, batchSize)}
	}
	total := &pb.ImportMemoriesResponse{}
	ctx, cancel := context.WithCancel(ctx) // the stream has no overall deadline
	defer cancel()
	stream, err := c.Store.ImportMemoriesStream(ctx)
	if err != nil {
		return total, wrap(err, nil)
	}
	for sequence := uint64(0); ; sequence++ {
		batch := nextBatch(items, batchSize)
		if len(batch) == 0 {
			break
		}
		if err := stream.Send(&pb.ImportBatch{Sequence: sequence, Items: batch}); err != nil {
			_, err = stream.Recv() // the stream's real status
			return total, wrapStream(stream, err)
		}
		ack, err := c.recvAck(ctx, stream)
		if err != nil {
			return total, wrapStream(stream, err)
		}
		Merge(total, ack, uint32(len(batch)), uint32(sequence)*uint32(batchSize))
		if progress != nil {
			progress(total.Received, ack)
		}
	}
	if err := stream.CloseSend(); err != nil {
		return total, wrapStream(stream, err)
	}
	if _, err := stream.Recv(); !errors.Is(err, io.EOF) {
		if err == nil {
			err = status.Error(codes.Internal, "an acknowledgement of no batch")
		}
		return total, wrapStream(stream, err)
	}
	return total, nil
}

// nextBatch receives up to size items (fewer only once the channel is closed).
func nextBatch(items <-chan *pb.ImportItem, size int) []*pb.ImportItem {
	var batch []*pb.ImportItem
	for item := range items {
		if batch = append(batch, item); len(batch) == size {
			break
		}
	}
	return batch
}

// recvAck waits for one acknowledgement, at most the client's Timeout.
func (c *Client) recvAck(ctx context.Context, stream pb.MemoryStore_ImportMemoriesStreamClient) (*pb.ImportBatchAck, error) {
	type reply struct {
		ack *pb.ImportBatchAck
		err error
	}
	got := make(chan reply, 1)
	go func() {
		ack, err := stream.Recv()
		got <- reply{ack, err}
	}()
	select {
	case r := <-got:
		return r.ack, r.err
	case <-time.After(c.Timeout):
		return nil, status.Errorf(codes.DeadlineExceeded, "no acknowledgement within %v", c.Timeout)
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	}
}

// wrapStream converts a stream's error, with the sidecar's trailers.
func wrapStream(stream grpc.ClientStream, err error) error {
	return wrap(err, stream.Trailer())
}

// Merge adds one batch's acknowledgement to total; error indices become positions in the
// whole import (offset: the batch's first item).
func Merge(total *pb.ImportMemoriesResponse, ack *pb.ImportBatchAck, received, offset uint32) {
	total.Received += received
	total.Stored += ack.Committed
	total.Rejected += ack.Rejected
	total.Deduplicated += ack.Deduplicated
	total.Ids = append(total.Ids, ack.Ids...)
	for _, e := range ack.Errors {
		moved := proto.Clone(e).(*pb.ImportError)
		moved.Index += offset
		total.Errors = append(total.Errors, moved)
	}
}
