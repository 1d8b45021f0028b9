//! gRPC over HTTP/2 framing: length-prefixed messages, status headers, grpc-timeout.
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use http::HeaderMap;
use prost::Message;

use crate::error::{Code, Error, Status};

const PREFIX: usize = 5;

/// The request body: each message prefixed by a 0 (uncompressed) byte and its u32 length.
pub fn encode<M: Message>(messages: &[M]) -> Bytes {
    let size: usize = messages.iter().map(|m| PREFIX + m.encoded_len()).sum();
    let mut buf = BytesMut::with_capacity(size);
    for message in messages {
        buf.put_u8(0);
        buf.put_u32(message.encoded_len() as u32);
        message.encode(&mut buf).expect("capacity reserved above");
    }
    buf.freeze()
}

/// The single message of a unary (or client-streaming) reply body.
pub fn decode_one<M: Message + Default>(mut body: &[u8]) -> Result<M, Error> {
    if body.len() < PREFIX {
        return Err(Error::Protocol(format!("reply of {} bytes holds no message", body.len())));
    }
    if body[0] != 0 {
        return Err(Error::Protocol("compressed reply, but no compression was offered".into()));
    }
    body.advance(1);
    let len = body.get_u32() as usize;
    if body.len() != len {
        return Err(Error::Protocol(format!("message length {len}, {} bytes follow", body.len())));
    }
    decode_message(body)
}

/// Takes the first whole message off the front of a streamed reply body (`None`: more bytes
/// are needed).
pub fn split_message(buf: &mut BytesMut) -> Result<Option<Bytes>, Error> {
    if buf.len() < PREFIX {
        return Ok(None);
    }
    if buf[0] != 0 {
        return Err(Error::Protocol("compressed reply, but no compression was offered".into()));
    }
    let len = u32::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]) as usize;
    if buf.len() < PREFIX + len {
        return Ok(None);
    }
    let mut message = buf.split_to(PREFIX + len);
    message.advance(PREFIX);
    Ok(Some(message.freeze()))
}

/// A message without its 5-byte prefix (`split_message`).
pub fn decode_message<M: Message + Default>(message: &[u8]) -> Result<M, Error> {
    M::decode(message).map_err(|e| Error::Protocol(format!("cannot decode the reply: {e}")))
}

/// The call's status from trailers (or the headers of a trailers-only reply); `None` when
/// they carry no `grpc-status`.
pub fn status(headers: &HeaderMap) -> Option<Result<(), Status>> {
    let value = headers.get("grpc-status")?.to_str().ok();
    let code = value.and_then(|v| v.trim().parse::<i32>().ok()).map_or(Code::Unknown, Code::from_i32);
    if code == Code::Ok {
        return Some(Ok(()));
    }
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    Some(Err(Status {
        code,
        message: text("grpc-message").map(|m| percent_decode(&m)).unwrap_or_default(),
        reason: text("memsidecar-reason"),
        field: text("memsidecar-field"),
    }))
}

/// Decodes the `%XX` escapes of a `grpc-message` (UTF-8; bad escapes are kept as they are).
pub fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The `grpc-timeout` value of a deadline: at most 8 digits, in the finest unit that fits.
pub fn timeout_header(timeout: Duration) -> String {
    let units = [(1u128, 'n'), (1_000, 'u'), (1_000_000, 'm'), (1_000_000_000, 'S'),
                 (60_000_000_000, 'M'), (3_600_000_000_000, 'H')];
    let nanos = timeout.as_nanos();
    for (per, unit) in units {
        let value = nanos.div_ceil(per);
        if value < 100_000_000 {
            return format!("{value}{unit}");
        }
    }
    "99999999H".to_string()
}
