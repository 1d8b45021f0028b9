//! Typed calls of the MemoryInjection and MemoryStore services.
use std::time::Duration;

use prost::Message;

use crate::error::Error;
use crate::framing;
use crate::h2transport::{H2Transport, Options};
use crate::pb;
use crate::transport::{Call, Transport};

/// Starts every injection block the sidecar returns.
pub const BLOCK_PREFIX: &str = "[Context from memory]";

/// Is `message` an injection block (a user message starting with `BLOCK_PREFIX`)?
pub fn is_block(message: &pb::Message) -> bool {
    message.role == pb::Role::User as i32 && message.content.starts_with(BLOCK_PREFIX)
}

const INJECTION: &str = "/memsidecar.v1.MemoryInjection/";
const STORE: &str = "/memsidecar.v1.MemoryStore/";

/// A memsidecar client over any `Transport` (HTTP/2 by default).
pub struct Client<T: Transport = H2Transport> {
    transport: T,
    /// Deadline of each call.
    pub timeout: Duration,
    /// The caller's agent id in the requests the client builds (get, forget, add_edge,
    /// reset_channel): its own memories and channels, plus shared memories.
    pub agent: String,
}

impl Client<H2Transport> {
    /// Connects to `addr`: HOST:PORT, unix:PATH or unix:///PATH.
    pub async fn connect(addr: &str, options: Options) -> Result<Self, Error> {
        let transport = H2Transport::connect(addr, &options).await?;
        Ok(Client { transport, timeout: options.timeout, agent: String::new() })
    }
}

impl<T: Transport> Client<T> {
    pub fn with_transport(transport: T, timeout: Duration) -> Self {
        Client { transport, timeout, agent: String::new() }
    }

    /// The same client acting as `agent` (see `Client::agent`).
    pub fn with_agent(mut self, agent: &str) -> Self {
        self.agent = agent.to_string();
        self
    }

    async fn call<Req: Message, Resp: Message + Default>(&self, path: &str, requests: &[Req]) -> Result<Resp, Error> {
        let call = Call { path, body: framing::encode(requests), timeout: self.timeout };
        framing::decode_one(&self.transport.call(call).await?)
    }

    pub async fn inject(&self, request: &pb::InjectRequest) -> Result<pb::InjectResponse, Error> {
        self.call(&format!("{INJECTION}Inject"), std::slice::from_ref(request)).await
    }

    pub async fn prune_history(&self, messages: Vec<pb::Message>, max_keep: u32) -> Result<pb::PruneHistoryResponse, Error> {
        let request = pb::PruneHistoryRequest { messages, max_keep: Some(max_keep), ..Default::default() };
        self.call(&format!("{INJECTION}PruneHistory"), &[request]).await
    }

    pub async fn render_transcript(&self, messages: Vec<pb::Message>) -> Result<pb::RenderTranscriptResponse, Error> {
        let request = pb::RenderTranscriptRequest { messages };
        self.call(&format!("{INJECTION}RenderTranscript"), &[request]).await
    }

    pub async fn reset_channel(&self, channel_id: &str) -> Result<pb::ResetChannelResponse, Error> {
        let request = pb::ResetChannelRequest { channel_id: channel_id.to_string(), agent_id: self.agent.clone() };
        self.call(&format!("{INJECTION}ResetChannel"), &[request]).await
    }

    pub async fn upsert(&self, memory: pb::Memory) -> Result<pb::UpsertMemoryResponse, Error> {
        let request = pb::UpsertMemoryRequest { memory: Some(memory) };
        self.call(&format!("{STORE}UpsertMemory"), &[request]).await
    }

    /// Streams every memory in one ImportMemories call and returns its summary.
    pub async fn import_memories(&self, memories: Vec<pb::Memory>) -> Result<pb::ImportMemoriesResponse, Error> {
        let requests: Vec<_> = memories.into_iter().map(|m| pb::UpsertMemoryRequest { memory: Some(m) }).collect();
        self.call(&format!("{STORE}ImportMemories"), &requests).await
    }

    pub async fn get(&self, id: &str) -> Result<pb::Memory, Error> {
        let request = pb::GetMemoryRequest { id: id.to_string(), agent_id: self.agent.clone() };
        self.call(&format!("{STORE}GetMemory"), &[request]).await
    }

    pub async fn forget(&self, id: &str, source: &str) -> Result<pb::ForgetMemoryResponse, Error> {
        let request = pb::ForgetMemoryRequest { id: id.to_string(), source: source.to_string(),
                                                agent_id: self.agent.clone() };
        self.call(&format!("{STORE}ForgetMemory"), &[request]).await
    }

    pub async fn list(&self, request: &pb::ListMemoriesRequest) -> Result<pb::ListMemoriesResponse, Error> {
        self.call(&format!("{STORE}ListMemories"), std::slice::from_ref(request)).await
    }

    pub async fn add_edge(&self, edge: pb::Edge) -> Result<pb::Edge, Error> {
        let request = pb::AddEdgeRequest { edge: Some(edge), agent_id: self.agent.clone() };
        self.call(&format!("{STORE}AddEdge"), &[request]).await
    }

    pub async fn remove_edge(&self, request: &pb::RemoveEdgeRequest) -> Result<pb::RemoveEdgeResponse, Error> {
        self.call(&format!("{STORE}RemoveEdge"), std::slice::from_ref(request)).await
    }

    pub async fn search(&self, request: &pb::SearchRequest) -> Result<pb::SearchResponse, Error> {
        self.call(&format!("{STORE}Search"), std::slice::from_ref(request)).await
    }
}
