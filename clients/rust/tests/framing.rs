//! The framing against bytes recorded from the reference protobuf serializer, and header
//! maps as the sidecar sends them.
use std::time::Duration;

use http::{HeaderMap, HeaderValue};
use bytes::BytesMut;
use memsidecar_client::framing::{decode_message, decode_one, encode, percent_decode, split_message, status, timeout_header};
use memsidecar_client::{merge, pb, Code, Error};

const INJECT_REQUEST: [u8; 15] = [0, 0, 0, 0, 10, 10, 1, 97, 18, 1, 99, 26, 2, 104, 105];
const INJECT_RESPONSE: [u8; 37] = [
    0, 0, 0, 0, 32, 10, 23, 91, 67, 111, 110, 116, 101, 120, 116, 32, 102, 114, 111, 109, 32,
    109, 101, 109, 111, 114, 121, 93, 10, 120, 26, 3, 56, 220, 11, 40, 3,
];
// The end user's fields: InjectRequest.user_id, ForgetUserRequest, ForgetMemoryRequest.hard.
const INJECT_REQUEST_OF_A_USER: [u8; 18] = [0, 0, 0, 0, 13, 10, 1, 97, 18, 1, 99, 26, 2, 104, 105, 58, 1, 117];
const FORGET_USER_REQUEST: [u8; 11] = [0, 0, 0, 0, 6, 10, 1, 97, 18, 1, 117];
const HARD_FORGET_REQUEST: [u8; 10] = [0, 0, 0, 0, 5, 10, 1, 109, 32, 1];
const TWO_UPSERTS: [u8; 24] = [
    0, 0, 0, 0, 7, 10, 5, 18, 3, 111, 110, 101, 0, 0, 0, 0, 7, 10, 5, 18, 3, 116, 119, 111,
];

fn upsert(content: &str) -> pb::UpsertMemoryRequest {
    pb::UpsertMemoryRequest { memory: Some(pb::Memory { content: content.into(), ..Default::default() }) }
}

fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.insert(*name, HeaderValue::from_static(value));
    }
    map
}

#[test]
fn encodes_a_unary_request() {
    let request = pb::InjectRequest { agent_id: "a".into(), channel_id: "c".into(), text: "hi".into(), ..Default::default() };
    assert_eq!(&encode(&[request])[..], &INJECT_REQUEST[..]);
}

#[test]
fn encodes_the_end_user_fields() {
    let request = pb::InjectRequest { agent_id: "a".into(), channel_id: "c".into(), text: "hi".into(),
                                      user_id: "u".into(), ..Default::default() };
    assert_eq!(&encode(&[request])[..], &INJECT_REQUEST_OF_A_USER[..]);
    let forget_user = pb::ForgetUserRequest { agent_id: "a".into(), user_id: "u".into() };
    assert_eq!(&encode(&[forget_user])[..], &FORGET_USER_REQUEST[..]);
    let hard = pb::ForgetMemoryRequest { id: "m".into(), hard: true, ..Default::default() };
    assert_eq!(&encode(&[hard])[..], &HARD_FORGET_REQUEST[..]);
}

#[test]
fn encodes_a_client_stream_as_consecutive_frames() {
    assert_eq!(&encode(&[upsert("one"), upsert("two")])[..], &TWO_UPSERTS[..]);
}

#[test]
fn decodes_a_reply() {
    let reply: pb::InjectResponse = decode_one(&INJECT_RESPONSE).unwrap();
    assert_eq!(reply.block, "[Context from memory]\nx");
    assert_eq!((reply.turn, reply.stats.unwrap().elapsed_us), (3, 1500));
}

#[test]
fn rejects_short_long_compressed_and_empty_bodies() {
    let mut compressed = INJECT_RESPONSE;
    compressed[0] = 1;
    for body in [&INJECT_RESPONSE[..20], &TWO_UPSERTS[..], &compressed[..], &[][..]] {
        let err = decode_one::<pb::InjectResponse>(body).unwrap_err();
        assert!(matches!(err, Error::Protocol(_)), "{err}");
    }
}

#[test]
fn ok_status_and_no_status() {
    assert_eq!(status(&headers(&[("grpc-status", "0")])), Some(Ok(())));
    assert_eq!(status(&headers(&[("content-type", "application/grpc")])), None);
}

#[test]
fn error_status_with_reason_field_and_a_percent_encoded_message() {
    let trailers = headers(&[
        ("grpc-status", "3"),
        ("grpc-message", "memory.content is empty: give the text %E2%80%94 100%25 blank"),
        ("memsidecar-reason", "EMPTY_CONTENT"),
        ("memsidecar-field", "memory.content"),
    ]);
    let got = status(&trailers).unwrap().unwrap_err();
    assert_eq!(got.code, Code::InvalidArgument);
    assert_eq!(got.message, "memory.content is empty: give the text \u{2014} 100% blank");
    assert_eq!(got.reason.as_deref(), Some("EMPTY_CONTENT"));
    assert_eq!(got.field.as_deref(), Some("memory.content"));
}

#[test]
fn unknown_or_garbled_codes_are_unknown() {
    for value in ["99", "-1", "x"] {
        let mut map = HeaderMap::new();
        map.insert("grpc-status", HeaderValue::from_str(value).unwrap());
        assert_eq!(status(&map).unwrap().unwrap_err().code, Code::Unknown);
    }
}

#[test]
fn percent_decoding_keeps_bad_escapes() {
    assert_eq!(percent_decode("a%2"), "a%2");
    assert_eq!(percent_decode("%zz%41"), "%zzA");
}

#[test]
fn timeout_header_uses_at_most_eight_digits() {
    assert_eq!(timeout_header(Duration::from_secs(5)), "5000000u");
    assert_eq!(timeout_header(Duration::from_millis(250)), "250000u");
    assert_eq!(timeout_header(Duration::from_secs(3600 * 24)), "86400000m");
    assert_eq!(timeout_header(Duration::from_nanos(7)), "7n");
}

#[test]
fn splits_streamed_messages_as_their_bytes_arrive() {
    let mut buf = BytesMut::new();
    for byte in &TWO_UPSERTS[..12] {
        assert!(split_message(&mut buf).unwrap().is_none());
        buf.extend_from_slice(&[*byte]);
    }
    let first = split_message(&mut buf).unwrap().expect("the first frame is whole");
    assert_eq!(decode_message::<pb::UpsertMemoryRequest>(&first).unwrap(), upsert("one"));
    assert!(split_message(&mut buf).unwrap().is_none() && buf.is_empty());
    buf.extend_from_slice(&TWO_UPSERTS[12..16]);
    assert!(split_message(&mut buf).unwrap().is_none()); // 4 of the 5 prefix bytes: wait
    buf.clear();
    buf.extend_from_slice(&[1, 0, 0, 0, 0]);
    assert!(matches!(split_message(&mut buf), Err(Error::Protocol(_))));
}

#[test]
fn merge_moves_error_indices_to_positions_in_the_whole_import() {
    let mut total = pb::ImportMemoriesResponse::default();
    let ack = |committed, index: Option<u32>| pb::ImportBatchAck {
        committed, rejected: index.map_or(0, |_| 1), ids: vec!["m".into(); committed as usize],
        errors: index.map(|i| pb::ImportError { index: i, ..Default::default() }).into_iter().collect(),
        ..Default::default()
    };
    merge(&mut total, &ack(2, None), 2, 0);
    merge(&mut total, &ack(1, Some(1)), 2, 2);
    assert_eq!((total.received, total.stored, total.rejected, total.ids.len()), (4, 3, 1, 3));
    assert_eq!(total.errors.iter().map(|e| e.index).collect::<Vec<_>>(), [3]);
}
