//! gRPC calls over one HTTP/2 connection (h2 on tokio), TCP or Unix socket, plaintext or
//! TLS. A lost connection is made again by the next call.
use std::sync::Mutex;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use h2::client::{ResponseFuture, SendRequest};
use h2::{RecvStream, SendStream};
use http::{HeaderValue, Request, Response};
use rustls::ServerName;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpStream, UnixStream};
use tokio_rustls::TlsConnector;

use crate::address::Address;
use crate::error::Error;
use crate::framing;
use crate::tls::{self, Tls};
use crate::transport::{Call, Transport};

/// Connection options.
#[derive(Clone, Debug)]
pub struct Options {
    /// Sent as `authorization: Bearer <token>` with every call.
    pub token: Option<String>,
    /// Default deadline of each call (of each acknowledgement in a streaming import).
    pub timeout: Duration,
    /// How long a connection attempt may take.
    pub connect_timeout: Duration,
    /// TLS (plaintext when `None`, as for a sidecar on localhost or a Unix socket).
    pub tls: Option<Tls>,
}

impl Default for Options {
    fn default() -> Self {
        Options { token: None, timeout: Duration::from_secs(5), connect_timeout: Duration::from_secs(5),
                  tls: None }
    }
}

/// One HTTP/2 connection to the sidecar; cheap to share, calls run concurrently.
pub struct H2Transport {
    address: Address,
    tls: Option<(TlsConnector, ServerName)>,
    connect_timeout: Duration,
    send: Mutex<Option<SendRequest<Bytes>>>,
    base: String,
    authorization: Option<HeaderValue>,
}

impl H2Transport {
    /// Connects now: an unreachable sidecar is an `Error::Connect`.
    pub async fn connect(addr: &str, options: &Options) -> Result<H2Transport, Error> {
        let transport = H2Transport::lazy(addr, options)?;
        transport.sender().await?;
        Ok(transport)
    }

    /// Connects on the first call (see `Client::wait_ready`); fails only on bad options.
    pub fn lazy(addr: &str, options: &Options) -> Result<H2Transport, Error> {
        let address = Address::parse(addr);
        let authorization = match &options.token {
            Some(token) => Some(HeaderValue::try_from(format!("Bearer {token}"))
                .map_err(|_| Error::Connect("the token is not a valid header value".into()))?),
            None => None,
        };
        let tls = match &options.tls {
            Some(settings) => Some(tls::connector(settings, address.host())?),
            None => None,
        };
        let scheme = if tls.is_some() { "https" } else { "http" };
        Ok(H2Transport { base: format!("{scheme}://{}", address.authority()), address, tls,
                         connect_timeout: options.connect_timeout, send: Mutex::new(None),
                         authorization })
    }

    /// The live connection, made first when there is none.
    async fn sender(&self) -> Result<SendRequest<Bytes>, Error> {
        if let Some(send) = self.send.lock().expect("connection lock").clone() {
            return Ok(send);
        }
        let send = tokio::time::timeout(self.connect_timeout, self.dial())
            .await
            .map_err(|_| Error::Connect(format!("no connection within {:?}", self.connect_timeout)))?
            .map_err(|e| Error::Connect(e.to_string()))?;
        *self.send.lock().expect("connection lock") = Some(send.clone());
        Ok(send)
    }

    async fn dial(&self) -> std::io::Result<SendRequest<Bytes>> {
        match &self.address {
            Address::Tcp(host_port) => {
                let stream = TcpStream::connect(host_port).await?;
                stream.set_nodelay(true)?;
                self.secure(stream).await
            }
            Address::Unix(path) => self.secure(UnixStream::connect(path).await?).await,
        }
    }

    async fn secure<T>(&self, io: T) -> std::io::Result<SendRequest<Bytes>>
    where
        T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        match &self.tls {
            Some((connector, name)) => handshake(connector.connect(name.clone(), io).await?).await,
            None => handshake(io).await,
        }
    }

    /// A stream ready for a request; a closed connection is dropped (the next call redials).
    async fn ready(&self) -> Result<SendRequest<Bytes>, Error> {
        self.sender().await?.ready().await.map_err(|e| {
            *self.send.lock().expect("connection lock") = None;
            transport(e)
        })
    }

    fn request(&self, path: &str, timeout: Option<Duration>) -> Result<Request<()>, Error> {
        let mut builder = Request::post(format!("{}{path}", self.base))
            .header("content-type", "application/grpc")
            .header("te", "trailers");
        if let Some(timeout) = timeout {
            builder = builder.header("grpc-timeout", framing::timeout_header(timeout));
        }
        let mut request = builder.body(()).map_err(|e| Error::Protocol(format!("bad request for {path}: {e}")))?;
        if let Some(value) = &self.authorization {
            request.headers_mut().insert("authorization", value.clone());
        }
        Ok(request)
    }

    /// Opens a streaming call (no overall deadline): send framed messages, read replies.
    pub async fn open(&self, path: &str) -> Result<Exchange, Error> {
        let request = self.request(path, None)?;
        let (response, send) = self.ready().await?.send_request(request, false).map_err(transport)?;
        Ok(Exchange { send, response: Some(response), body: None, buf: BytesMut::new() })
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
        let request = self.request(call.path, Some(call.timeout))?;
        let exchange = async {
            let (response, mut stream) = self.ready().await?.send_request(request, false).map_err(transport)?;
            stream.send_data(call.body, true).map_err(transport)?;
            read_reply(response.await.map_err(transport)?).await
        };
        tokio::time::timeout(call.timeout, exchange).await.unwrap_or(Err(Error::deadline(call.timeout)))
    }
}

/// The reply body of a call that ended OK; the status from the trailers, or from the
/// headers of a trailers-only reply.
async fn read_reply(response: Response<RecvStream>) -> Result<Bytes, Error> {
    let mut body = reply_body(response)?;
    let mut buf = BytesMut::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.map_err(transport)?;
        let _ = body.flow_control().release_capacity(chunk.len());
        buf.extend_from_slice(&chunk);
    }
    end_status(&mut body).await.map(|()| buf.freeze())
}

/// The body of a reply whose headers carry no final status.
fn reply_body(response: Response<RecvStream>) -> Result<RecvStream, Error> {
    let (parts, body) = response.into_parts();
    if let Some(status) = framing::status(&parts.headers) {
        status.map_err(Error::Status)?;
        return Err(Error::Protocol("status OK without a reply message".into()));
    }
    if parts.status != http::StatusCode::OK {
        return Err(Error::Transport(format!("HTTP status {}", parts.status)));
    }
    Ok(body)
}

/// The call's status from the trailers.
async fn end_status(body: &mut RecvStream) -> Result<(), Error> {
    let trailers = body.trailers().await.map_err(transport)?.unwrap_or_default();
    match framing::status(&trailers) {
        Some(status) => status.map_err(Error::Status),
        None => Err(Error::Protocol("the reply ended without grpc-status".into())),
    }
}

/// One open streaming call (`H2Transport::open`).
pub struct Exchange {
    send: SendStream<Bytes>,
    response: Option<ResponseFuture>,
    body: Option<RecvStream>,
    buf: BytesMut,
}

impl Exchange {
    /// Sends framed request messages (`framing::encode`).
    pub fn send(&mut self, framed: Bytes) -> Result<(), Error> {
        self.send.send_data(framed, false).map_err(transport)
    }

    /// Ends the request side.
    pub fn finish(&mut self) -> Result<(), Error> {
        self.send.send_data(Bytes::new(), true).map_err(transport)
    }

    /// The next reply message; `None` once the call ended with status OK.
    pub async fn message(&mut self) -> Result<Option<Bytes>, Error> {
        if let Some(response) = self.response.take() {
            let response = response.await.map_err(transport)?;
            let (parts, body) = response.into_parts();
            if let Some(status) = framing::status(&parts.headers) {
                return status.map(|()| None).map_err(Error::Status); // trailers-only
            }
            self.body = Some(reply_body(Response::from_parts(parts, body))?);
        }
        let Some(body) = self.body.as_mut() else { return Ok(None) };
        loop {
            if let Some(message) = framing::split_message(&mut self.buf)? {
                return Ok(Some(message));
            }
            match body.data().await {
                Some(chunk) => {
                    let chunk = chunk.map_err(transport)?;
                    let _ = body.flow_control().release_capacity(chunk.len());
                    self.buf.extend_from_slice(&chunk);
                }
                None if self.buf.is_empty() => {
                    end_status(body).await?;
                    self.body = None;
                    return Ok(None);
                }
                None => return Err(Error::Protocol("the reply ended inside a message".into())),
            }
        }
    }
}
