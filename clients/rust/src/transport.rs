//! The transport contract: one gRPC call in, the raw reply body out. `H2Transport` is the
//! implementation; another (e.g. tonic) can replace it without changing `Client`.
use std::future::Future;
use std::time::Duration;

use bytes::Bytes;

use crate::error::Error;

/// One call: the method path (`/memsidecar.v1.MemoryInjection/Inject`), the framed request
/// messages (one for unary calls, any number for client streaming) and the deadline.
pub struct Call<'a> {
    pub path: &'a str,
    pub body: Bytes,
    pub timeout: Duration,
}

pub trait Transport {
    /// Runs the call; `Ok` holds the framed reply body of a call that ended with status OK.
    fn call(&self, call: Call<'_>) -> impl Future<Output = Result<Bytes, Error>> + Send;
}
