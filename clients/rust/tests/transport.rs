//! `Client` over a recorded transport: the path and body it sends, the reply it decodes.
use std::sync::Mutex;
use std::time::Duration;

use bytes::Bytes;
use memsidecar_client::framing::encode;
use memsidecar_client::{is_block, pb, Call, Client, Code, Error, Status, Transport, BLOCK_PREFIX};

struct Recorded {
    reply: Result<Bytes, Status>,
    seen: Mutex<Vec<(String, Bytes, Duration)>>,
}

impl Transport for &Recorded {
    async fn call(&self, call: Call<'_>) -> Result<Bytes, Error> {
        self.seen.lock().unwrap().push((call.path.to_string(), call.body, call.timeout));
        self.reply.clone().map_err(Error::Status)
    }
}

fn recorded(reply: Result<Bytes, Status>) -> Recorded {
    Recorded { reply, seen: Mutex::new(vec![]) }
}

#[tokio::test]
async fn reset_channel_sends_path_body_deadline_and_decodes_the_reply() {
    let transport = recorded(Ok(encode(&[pb::ResetChannelResponse { existed: true }])));
    let client = Client::with_transport(&transport, Duration::from_secs(2));
    assert!(client.reset_channel("ch").await.unwrap().existed);
    let seen = transport.seen.lock().unwrap();
    let expected = encode(&[pb::ResetChannelRequest { channel_id: "ch".into(), ..Default::default() }]);
    assert_eq!(seen[..], [("/memsidecar.v1.MemoryInjection/ResetChannel".to_string(), expected,
                           Duration::from_secs(2))]);
}

#[tokio::test]
async fn import_streams_every_memory_in_one_call() {
    let summary = pb::ImportMemoriesResponse { received: 2, stored: 2, ..Default::default() };
    let transport = recorded(Ok(encode(&[summary.clone()])));
    let client = Client::with_transport(&transport, Duration::from_secs(2));
    let memories = ["one", "two"].map(|c| pb::Memory { content: c.into(), ..Default::default() });
    assert_eq!(client.import_memories(memories.to_vec()).await.unwrap(), summary);
    let seen = transport.seen.lock().unwrap();
    let requests = memories.map(|m| pb::UpsertMemoryRequest { memory: Some(m) });
    assert_eq!((seen[0].0.as_str(), &seen[0].1), ("/memsidecar.v1.MemoryStore/ImportMemories", &encode(&requests)));
}

#[tokio::test]
async fn a_status_comes_back_as_error_status() {
    let status = Status { code: Code::NotFound, message: "no memory x".into(), reason: None, field: None };
    let transport = recorded(Err(status.clone()));
    let err = Client::with_transport(&transport, Duration::from_secs(2)).get("x").await.unwrap_err();
    assert_eq!(err.code(), Code::NotFound);
    assert_eq!(err.status(), Some(&status));
}

#[test]
fn blocks_are_user_messages_with_the_prefix() {
    let message = |role: pb::Role, content: &str| pb::Message { role: role as i32, content: content.into(), ..Default::default() };
    assert!(is_block(&message(pb::Role::User, &format!("{BLOCK_PREFIX}\n[Fact] x"))));
    assert!(!is_block(&message(pb::Role::Assistant, BLOCK_PREFIX)));
    assert!(!is_block(&message(pb::Role::User, &format!("hello {BLOCK_PREFIX}"))));
}
