//! A template for a Rust agent using memsidecar: copy it into your agent.
//!
//! Each stdin line is one user turn: PruneHistory drops old memory blocks, Inject returns the
//! block for this turn, the block goes into the history before the user's message,
//! llm(history) answers, the answer is appended. Each turn's block is printed.
//!
//!     agent-loop --addr 127.0.0.1:50051 --channel demo < questions.txt
#[path = "common/flags.rs"]
mod flags;

use memsidecar_client::{pb, Client, Code, Error, Options};
use tokio::io::{AsyncBufReadExt, BufReader};

/// How many memory blocks the history keeps, the incoming one included.
const MAX_BLOCKS: u32 = 3;

/// Example memories with fixed ids: seeding twice stores nothing new.
const SEEDS: [(&str, pb::MemoryType, &str); 3] = [
    ("agent-loop-example-db", pb::MemoryType::Decision,
     "We chose PostgreSQL 16 as the primary database for the billing service."),
    ("agent-loop-example-deploy", pb::MemoryType::Fact,
     "The deploy pipeline ships to the Kubernetes cluster every Friday."),
    ("agent-loop-example-style", pb::MemoryType::Preference,
     "The user prefers short answers with Go code examples."),
];

/// Stands in for your model: CALL YOUR LLM HERE with the whole history (memory blocks
/// included). This stand-in echoes the last user message.
fn llm(history: &[pb::Message]) -> String {
    format!("(echo) {}", history.last().map_or("", |m| m.content.as_str()))
}

fn message(role: pb::Role, content: &str) -> pb::Message {
    pb::Message { role: role as i32, content: content.to_string(), ..Default::default() }
}

/// Stores each example memory that the store does not hold yet.
async fn seed(client: &Client, agent: &str) -> Result<(), Error> {
    for (id, kind, content) in SEEDS {
        match client.get(id).await {
            Ok(_) => continue,
            Err(e) if e.code() == Code::NotFound => {}
            Err(e) => return Err(e),
        }
        let memory = pb::Memory { id: id.into(), r#type: kind as i32, content: content.into(),
                                  agent_id: agent.into(), ..Default::default() };
        client.upsert(memory).await?;
    }
    Ok(())
}

/// Runs one turn and returns the grown history.
async fn step(client: &Client, agent: &str, channel: &str, history: Vec<pb::Message>,
              text: &str, turn: usize) -> Result<Vec<pb::Message>, Error> {
    let mut history = client.prune_history(history, MAX_BLOCKS).await?.messages;
    let request = pb::InjectRequest { agent_id: agent.into(), channel_id: channel.into(),
                                      text: text.into(), source: "user".into(), ..Default::default() };
    let injected = client.inject(&request).await?;
    println!("--- turn {turn}");
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
    let flags = flags::parse(&["addr", "channel", "agent", "token"])?;
    let flag = |name: &str, default: &str| flags.get(name).cloned().unwrap_or_else(|| default.to_string());
    let (addr, channel, agent) = (flag("addr", "127.0.0.1:50051"), flag("channel", "agent-loop"),
                                  flag("agent", "agent-loop-example"));
    let options = Options { token: flags.get("token").cloned(), ..Options::default() };
    let client = Client::connect(&addr, options).await
        .map_err(|e| format!("cannot reach the sidecar at {addr}: {e}"))?
        .with_agent(&agent);
    seed(&client, &agent).await.map_err(|e| e.to_string())?;
    // A new conversation: forget what the sidecar injected earlier on this channel.
    client.reset_channel(&channel).await.map_err(|e| e.to_string())?;
    let mut history = vec![message(pb::Role::System, "You are a helpful engineering agent.")];
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut turn = 0;
    while let Some(line) = lines.next_line().await.map_err(|e| e.to_string())? {
        turn += 1;
        history = step(&client, &agent, &channel, history, &line, turn).await.map_err(|e| e.to_string())?;
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
