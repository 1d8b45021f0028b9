//! The standard gRPC health service (`grpc.health.v1.Health/Check`), and waiting for SERVING.
use std::time::Duration;

use tokio::time::Instant;

use crate::client::Client;
use crate::error::{Code, Error, Status};
use crate::transport::Transport;

/// `grpc.health.v1.HealthCheckRequest` (grpc/health/v1/health.proto).
#[derive(Clone, PartialEq, prost::Message)]
pub struct HealthCheckRequest {
    #[prost(string, tag = "1")]
    pub service: String,
}

/// `grpc.health.v1.HealthCheckResponse`; `status` 1 is SERVING, 2 NOT_SERVING.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HealthCheckResponse {
    #[prost(int32, tag = "1")]
    pub status: i32,
}

/// `HealthCheckResponse::status` of a server ready for calls.
pub const SERVING: i32 = 1;
const FIRST_PAUSE: Duration = Duration::from_millis(100);
const MAX_PAUSE: Duration = Duration::from_secs(2);

impl<T: Transport> Client<T> {
    /// The health of `service` ("" = the whole server).
    pub async fn health(&self, service: &str) -> Result<HealthCheckResponse, Error> {
        let request = HealthCheckRequest { service: service.to_string() };
        self.call("/grpc.health.v1.Health/Check", &[request]).await
    }

    /// Returns once the sidecar's health is SERVING. While it cannot be reached
    /// (UNAVAILABLE: a client from `Client::connect_lazy` keeps redialling) or reports
    /// NOT_SERVING (loading its model, warming up), it asks again with a growing pause;
    /// after `timeout` the error is DeadlineExceeded naming the last state seen. Other
    /// errors (a wrong token, ...) return at once.
    pub async fn wait_ready(&self, timeout: Duration) -> Result<(), Error> {
        let deadline = Instant::now() + timeout;
        let mut pause = FIRST_PAUSE;
        loop {
            let last = match self.health("").await {
                Ok(reply) if reply.status == SERVING => return Ok(()),
                Ok(reply) => format!("the sidecar reports status {}", reply.status),
                Err(e) if matches!(e.code(), Code::Unavailable | Code::DeadlineExceeded) => e.to_string(),
                Err(e) => return Err(e),
            };
            if Instant::now() + pause >= deadline {
                return Err(Error::Status(Status {
                    code: Code::DeadlineExceeded,
                    message: format!("the sidecar is not SERVING within {timeout:?} ({last})"),
                    reason: None,
                    field: None,
                }));
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(MAX_PAUSE);
        }
    }
}
