//! gRPC calls over one HTTP/2 connection (h2 on tokio), TCP or Unix socket, plaintext.
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use h2::client::SendRequest;
use h2::RecvStream;
use http::{HeaderValue, Request, Response};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpStream, UnixStream};

use crate::address::Address;
use crate::error::Error;
use crate::framing;
use crate::transport::{Call, Transport};

/// Connection options.
#[derive(Clone, Debug)]
pub struct Options {
    /// Sent as `authorization: Bearer <token>` with every call.
    pub token: Option<String>,
    /// Default deadline of each call.
    pub timeout: Duration,
    /// How long `connect` waits for the connection.
    pub connect_timeout: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options { token: None, timeout: Duration::from_secs(5), connect_timeout: Duration::from_secs(5) }
    }
}

/// One HTTP/2 connection to the sidecar; cheap to share, calls run concurrently.
pub struct H2Transport {
    send: SendRequest<Bytes>,
    authority: String,
    authorization: Option<HeaderValue>,
}

impl H2Transport {
    pub async fn connect(addr: &str, options: &Options) -> Result<H2Transport, Error> {
        let address = Address::parse(addr);
        let authorization = match &options.token {
            Some(token) => Some(HeaderValue::try_from(format!("Bearer {token}"))
                .map_err(|_| Error::Connect("the token is not a valid header value".into()))?),
            None => None,
        };
        let connecting = async {
            match &address {
                Address::Tcp(host_port) => {
                    let stream = TcpStream::connect(host_port).await?;
                    stream.set_nodelay(true)?;
                    handshake(stream).await
                }
                Address::Unix(path) => handshake(UnixStream::connect(path).await?).await,
            }
        };
        let send = tokio::time::timeout(options.connect_timeout, connecting)
            .await
            .map_err(|_| Error::Connect(format!("no connection within {:?}", options.connect_timeout)))?
            .map_err(|e| Error::Connect(e.to_string()))?;
        Ok(H2Transport { send, authority: address.authority().to_string(), authorization })
    }

    fn request(&self, path: &str, timeout: Duration) -> Result<Request<()>, Error> {
        let mut request = Request::post(format!("http://{}{path}", self.authority))
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .header("grpc-timeout", framing::timeout_header(timeout))
            .body(())
            .map_err(|e| Error::Protocol(format!("bad request for {path}: {e}")))?;
        if let Some(value) = &self.authorization {
            request.headers_mut().insert("authorization", value.clone());
        }
        Ok(request)
    }
}

async fn handshake<T>(io: T) -> std::io::Result<SendRequest<Bytes>>
where
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (send, connection) = h2::client::handshake(io).await.map_err(std::io::Error::other)?;
    tokio::spawn(async move {
        let _ = connection.await; // ends when the connection closes; calls see the error
    });
    Ok(send)
}

fn transport(e: h2::Error) -> Error {
    Error::Transport(e.to_string())
}

impl Transport for H2Transport {
    async fn call(&self, call: Call<'_>) -> Result<Bytes, Error> {
        let request = self.request(call.path, call.timeout)?;
        let exchange = async {
            let mut send = self.send.clone().ready().await.map_err(transport)?;
            let (response, mut stream) = send.send_request(request, false).map_err(transport)?;
            stream.send_data(call.body, true).map_err(transport)?;
            read_reply(response.await.map_err(transport)?).await
        };
        tokio::time::timeout(call.timeout, exchange).await.unwrap_or(Err(Error::deadline(call.timeout)))
    }
}

/// The reply body of a call that ended OK; the status from the trailers, or from the
/// headers of a trailers-only reply.
async fn read_reply(response: Response<RecvStream>) -> Result<Bytes, Error> {
    let (parts, mut body) = response.into_parts();
    if let Some(status) = framing::status(&parts.headers) {
        status.map_err(Error::Status)?;
        return Err(Error::Protocol("status OK without a reply message".into()));
    }
    if parts.status != http::StatusCode::OK {
        return Err(Error::Transport(format!("HTTP status {}", parts.status)));
    }
    let mut buf = BytesMut::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.map_err(transport)?;
        let _ = body.flow_control().release_capacity(chunk.len());
        buf.extend_from_slice(&chunk);
    }
    let trailers = body.trailers().await.map_err(transport)?.unwrap_or_default();
    match framing::status(&trailers) {
        Some(status) => status.map(|()| buf.freeze()).map_err(Error::Status),
        None => Err(Error::Protocol("the reply ended without grpc-status".into())),
    }
}
