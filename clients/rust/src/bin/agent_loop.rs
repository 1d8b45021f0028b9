//! A template for a Rust agent using memsidecar: copy it into your agent.
//!
//! Each stdin line is one user turn: PruneHistory (with the channel, keeping 3 blocks) drops
//! the oldest memory blocks and tells the sidecar which memories the model no longer sees;
//! Inject returns the block for this turn; the block goes into the history before the
//! user's message; llm(history) answers; the answer is appended. Each turn's block is
//! printed.
//!
//!     agent-loop --addr 127.0.0.1:50051 --channel demo --user alice < questions.txt
//!
//! Every Inject names the end user (`--user`): the block may hold that user's private
//! memories and never another user's, and a turn the sidecar captures belongs to that user.
#[path = "common/flags.rs"]
mod flags;

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_core::Stream;
use memsidecar_client::{pb, Client, Error, Options, Tls, MAX_IMPORT_BATCH};
use tokio::io::{AsyncBufReadExt, BufReader};

/// How many memory blocks the history keeps, the incoming one included.
const MAX_BLOCKS: u32 = 3;

/// The example memories, shared with the Go and Python templates: one
/// "name<TAB>type<TAB>content" line each. A memory id names one memory of one agent, so each
/// seed's id is AGENT:NAME; seeding twice stores nothing new.
const SEEDS: &str = include_str!("../../../go/cmd/agent-loop/seeds.tsv");

const ABOUT: &str = "agent-loop: a memsidecar agent loop; one user turn per stdin line, each turn's block printed.";
const FLAGS: [(&str, &str); 7] = [
    ("addr", "sidecar address HOST:PORT, unix:PATH or unix:///PATH (default 127.0.0.1:50051)"),
    ("channel", "conversation (channel) id (default agent-loop)"),
    ("agent", "agent id owning the seeded memories (default agent-loop-example)"),
    ("user", "end user id sent with every Inject (empty: not known; the turns captured then stay private to the channel)"),
    ("token", "bearer token sent with every call"),
    ("wait", "seconds to wait for the sidecar to be ready (default 30)"),
    ("ca", "CA certificate (PEM) of a TLS sidecar; plaintext without it"),
];

/// Stands in for your model: CALL YOUR LLM HERE with the whole history (memory blocks
/// included). This stand-in echoes the last user message.
fn llm(history: &[pb::Message]) -> String {
    format!("(echo) {}", history.last().map_or("", |m| m.content.as_str()))
}

fn message(role: pb::Role, content: &str) -> pb::Message {
    pb::Message { role: role as i32, content: content.to_string(), ..Default::default() }
}

/// The memories of `SEEDS` ('#' lines are comments), owned by `agent`.
fn seeds(agent: &str) -> Result<Vec<pb::Memory>, String> {
    let lines = SEEDS.lines().filter(|l| !l.is_empty() && !l.starts_with('#'));
    lines.map(|line| {
        let mut fields = line.splitn(3, '\t');
        let (Some(name), Some(kind), Some(content)) = (fields.next(), fields.next(), fields.next()) else {
            return Err(format!("seeds.tsv: expected name, type and content in {line:?}"));
        };
        let kind = pb::MemoryType::from_str_name(&format!("MEMORY_TYPE_{}", kind.to_uppercase()))
            .ok_or(format!("seeds.tsv: unknown memory type {kind:?}"))?;
        Ok(pb::Memory { id: format!("{agent}:{name}"), r#type: kind as i32, content: content.into(),
                        agent_id: agent.into(), ..Default::default() })
    }).collect()
}

/// Imports the example memories over a streaming import: those already stored with the
/// same fields count as deduplicated, so a second run stores nothing. Each rejected one is
/// printed with the sidecar's reason.
async fn seed(client: &Client, agent: &str) -> Result<(), String> {
    let memories = seeds(agent)?;
    let names: Vec<String> = memories.iter().map(|m| m.id[agent.len() + 1..].to_string()).collect();
    let items = memories.into_iter().map(|m| pb::ImportItem { memory: Some(m), ..Default::default() });
    let summary = client.import_stream(Items(items), MAX_IMPORT_BATCH, |_, _| {}).await
        .map_err(|e| e.to_string())?;
    eprintln!("seeded {} memories: {} stored, {} already there, {} rejected", summary.received,
              summary.stored, summary.deduplicated, summary.rejected);
    for e in &summary.errors {
        eprintln!("seed {} rejected: {}: {}", names[e.index as usize], e.code, e.message);
    }
    Ok(())
}

/// An iterator as a `Stream` (what `import_stream` reads; a channel or a file reader fits too).
struct Items<I>(I);

impl<I: Iterator + Unpin> Stream for Items<I> {
    type Item = I::Item;
    fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<I::Item>> {
        Poll::Ready(self.0.next())
    }
}

/// Runs one turn and returns the grown history.
async fn step(client: &Client, agent: &str, channel: &str, user: &str, history: Vec<pb::Message>,
              text: &str, turn: usize) -> Result<Vec<pb::Message>, Error> {
    let pruned = client.prune_history(channel, history, Some(MAX_BLOCKS)).await?;
    let mut history = pruned.messages;
    let request = pb::InjectRequest { agent_id: agent.into(), channel_id: channel.into(), user_id: user.into(),
                                      text: text.into(), source: "user".into(), ..Default::default() };
    let injected = client.inject(&request).await?;
    println!("--- turn {turn}");
    let released: Vec<String> = pruned.released_turns.iter().map(u64::to_string).collect();
    println!("released turns: {}", if released.is_empty() { "-".to_string() } else { released.join(",") });
    if injected.block.is_empty() {
        println!("(no memory block: {})", injected.skip_reason);
    } else {
        println!("{}", injected.block);
        history.push(message(pb::Role::User, &injected.block));
    }
    history.push(message(pb::Role::User, text));
    let reply = llm(&history);
    println!("assistant: {reply}");
    history.push(message(pb::Role::Assistant, &reply));
    Ok(history)
}

async fn run() -> Result<(), String> {
    let flags = flags::parse(ABOUT, &FLAGS)?;
    let flag = |name: &str, default: &str| flags.get(name).cloned().unwrap_or_else(|| default.to_string());
    let (addr, channel, agent) = (flag("addr", "127.0.0.1:50051"), flag("channel", "agent-loop"),
                                  flag("agent", "agent-loop-example"));
    let user = flag("user", "");
    let wait: f64 = flag("wait", "30").parse().map_err(|e| format!("--wait: {e}"))?;
    let tls = match flags.get("ca") {
        Some(path) => Some(Tls { ca_pem: std::fs::read(path).map_err(|e| format!("--ca {path}: {e}"))?,
                                 ..Tls::default() }),
        None => None,
    };
    let options = Options { token: flags.get("token").cloned(), tls, ..Options::default() };
    // connect_lazy + wait_ready: waits for a sidecar that is still starting.
    let client = Client::connect_lazy(&addr, options).map_err(|e| e.to_string())?.with_agent(&agent);
    client.wait_ready(Duration::from_secs_f64(wait)).await
        .map_err(|e| format!("cannot reach the sidecar at {addr}: {e}"))?;
    seed(&client, &agent).await?;
    // A new conversation: forget what the sidecar injected earlier on this channel.
    client.reset_channel(&channel).await.map_err(|e| e.to_string())?;
    let mut history = vec![message(pb::Role::System, "You are a helpful engineering agent.")];
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut turn = 0;
    while let Some(line) = lines.next_line().await.map_err(|e| e.to_string())? {
        turn += 1;
        history = step(&client, &agent, &channel, &user, history, &line, turn).await.map_err(|e| e.to_string())?;
    }
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    if let Err(reason) = run().await {
        eprintln!("agent-loop: {reason}");
        std::process::exit(1);
    }
}
