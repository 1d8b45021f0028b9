package msclient

import (
	"context"
	"errors"
	"io"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	pb "github.com/memsidecar/memsidecar/clients/go/memsidecarv1"
)

// MaxImportBatch is the largest batch ImportMemoriesStream accepts.
const MaxImportBatch = 100

// ImportStream imports items in acknowledged batches of at most batchSize (1..100) over
// ImportMemoriesStream and returns one acknowledgement per batch, in order. When the stream
// breaks (UNAVAILABLE), it reopens it up to retries times and resends every batch not yet
// acknowledged: items with an id already stored with the same fields commit nothing twice.
func (c *Client) ImportStream(ctx context.Context, items []*pb.ImportItem, batchSize, retries int) ([]*pb.ImportBatchAck, error) {
	if batchSize < 1 || batchSize > MaxImportBatch {
		batchSize = MaxImportBatch
	}
	var batches []*pb.ImportBatch
	for start := 0; start < len(items); start += batchSize {
		end := start + batchSize
		if end > len(items) {
			end = len(items)
		}
		batches = append(batches, &pb.ImportBatch{Sequence: uint64(len(batches)), Items: items[start:end]})
	}
	var acks []*pb.ImportBatchAck
	for attempt := 0; ; attempt++ {
		err := c.call(ctx, func(ctx context.Context, o ...grpc.CallOption) error {
			return sendBatches(ctx, c.Store, batches[len(acks):], &acks, o...)
		})
		if err == nil || CodeOf(err) != codes.Unavailable || attempt >= retries {
			return acks, err
		}
	}
}

// sendBatches sends each batch and waits for its acknowledgement before the next.
func sendBatches(ctx context.Context, store pb.MemoryStoreClient, batches []*pb.ImportBatch,
	acks *[]*pb.ImportBatchAck, o ...grpc.CallOption) error {
	stream, err := store.ImportMemoriesStream(ctx, o...)
	if err != nil {
		return err
	}
	for _, b := range batches {
		if err = stream.Send(b); err != nil {
			_, err = stream.Recv() // the stream's real status
			return err
		}
		ack, err := stream.Recv()
		if err != nil {
			return err
		}
		*acks = append(*acks, ack)
	}
	if err = stream.CloseSend(); err != nil {
		return err
	}
	if _, err = stream.Recv(); errors.Is(err, io.EOF) { // the server ended the stream
		return nil
	}
	return err
}
