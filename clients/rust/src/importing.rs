//! Streaming import over ImportMemoriesStream: a `Stream` of items in, each acknowledged
//! batch reported, the summary of the whole import out.
use std::future::poll_fn;
use std::pin::Pin;

use futures_core::Stream;

use crate::client::Client;
use crate::error::{Code, Error, Status};
use crate::framing;
use crate::h2transport::{Exchange, H2Transport};
use crate::pb;

/// The largest batch ImportMemoriesStream accepts.
pub const MAX_IMPORT_BATCH: usize = 100;
const PATH: &str = "/memsidecar.v1.MemoryStore/ImportMemoriesStream";

/// Adds one batch's acknowledgement to `total`; error indices become positions in the whole
/// import (`offset`: the batch's first item).
pub fn merge(total: &mut pb::ImportMemoriesResponse, ack: &pb::ImportBatchAck, received: u32, offset: u32) {
    total.received += received;
    total.stored += ack.committed;
    total.rejected += ack.rejected;
    total.deduplicated += ack.deduplicated;
    total.ids.extend(ack.ids.iter().cloned());
    total.errors.extend(ack.errors.iter().map(|e| pb::ImportError { index: e.index + offset, ..e.clone() }));
}

/// Up to `size` items from the stream (fewer only at its end).
async fn next_batch<S>(items: &mut S, size: usize) -> Vec<pb::ImportItem>
where
    S: Stream<Item = pb::ImportItem> + Unpin,
{
    let mut batch = Vec::with_capacity(size);
    while batch.len() < size {
        match poll_fn(|cx| Pin::new(&mut *items).poll_next(cx)).await {
            Some(item) => batch.push(item),
            None => break,
        }
    }
    batch
}

impl Client<H2Transport> {
    /// Imports `items` in acknowledged batches of `batch_size` (1..=100) over one
    /// ImportMemoriesStream call, reading the stream as batches go (one batch ahead of its
    /// acknowledgement). `progress(received, ack)` follows each acknowledgement (`received`:
    /// items acknowledged so far). Returns the summary of the whole import; error indices
    /// count from its first item. Each acknowledgement must come within the client's
    /// timeout. A failed stream returns its error; batches acknowledged before it are
    /// stored (items with an id are not stored twice when sent again).
    pub async fn import_stream<S, P>(&self, mut items: S, batch_size: usize, mut progress: P)
        -> Result<pb::ImportMemoriesResponse, Error>
    where
        S: Stream<Item = pb::ImportItem> + Unpin,
        P: FnMut(u32, &pb::ImportBatchAck),
    {
        if !(1..=MAX_IMPORT_BATCH).contains(&batch_size) {
            return Err(Error::Status(Status {
                code: Code::InvalidArgument,
                message: format!("batch_size must be 1..={MAX_IMPORT_BATCH}, got {batch_size}"),
                reason: None,
                field: Some("batch_size".into()),
            }));
        }
        let mut exchange = self.transport.open(PATH).await?;
        let mut total = pb::ImportMemoriesResponse::default();
        let mut sequence = 0u64;
        loop {
            let batch = next_batch(&mut items, batch_size).await;
            if batch.is_empty() {
                break;
            }
            let received = batch.len() as u32;
            exchange.send(framing::encode(&[pb::ImportBatch { sequence, items: batch }]))?;
            let ack: pb::ImportBatchAck = self.reply(&mut exchange).await?
                .ok_or_else(|| Error::Protocol("the import stream ended before an acknowledgement".into()))?;
            merge(&mut total, &ack, received, (sequence as usize * batch_size) as u32);
            progress(total.received, &ack);
            sequence += 1;
        }
        exchange.finish()?;
        match self.reply::<pb::ImportBatchAck>(&mut exchange).await? {
            None => Ok(total),
            Some(_) => Err(Error::Protocol("an acknowledgement of no batch".into())),
        }
    }

    /// The next reply message of a stream, within the client's timeout.
    async fn reply<M: prost::Message + Default>(&self, exchange: &mut Exchange) -> Result<Option<M>, Error> {
        let message = tokio::time::timeout(self.timeout, exchange.message())
            .await
            .unwrap_or(Err(Error::deadline(self.timeout)))?;
        message.map(|m| framing::decode_message(&m)).transpose()
    }
}
