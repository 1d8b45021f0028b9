//! Checks every call of the Rust client against a running sidecar, printing "ok NAME" or
//! "FAIL NAME: detail" per check and "N ok, M failed" last; exit 0 when every check holds,
//! 1 when one fails, 2 when the sidecar cannot be reached. Its memories belong to an agent
//! id unique to the run.
//!
//!     selftest --addr 127.0.0.1:50051 [--wait SECONDS] [--ca PEM [--cert PEM --key PEM] [--server-name NAME]]
#[path = "common/flags.rs"]
mod flags;

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures_core::Stream;
use memsidecar_client::{is_block, pb, Client, Code, Error, Options, Tls};

const ABOUT: &str = "selftest: checks every call of the Rust client against a running sidecar.";
const CANON: &str = "Mission: keep the billing service on PostgreSQL and ship the v2 API by June.";

struct Items(std::vec::IntoIter<pb::ImportItem>);

impl Stream for Items {
    type Item = pb::ImportItem;
    fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<pb::ImportItem>> {
        Poll::Ready(self.0.next())
    }
}

struct Session {
    client: Client,
    agent: String,
    passed: usize,
    failed: usize,
}

impl Session {
    /// Records one check: `Ok(true)` passes; `Ok(false)` and `Err` fail with `detail`.
    fn check(&mut self, name: &str, outcome: Result<bool, Error>, detail: impl FnOnce() -> String) {
        match outcome {
            Ok(true) => {
                self.passed += 1;
                println!("ok {name}");
            }
            Ok(false) => {
                self.failed += 1;
                println!("FAIL {name}: {}", detail());
            }
            Err(e) => {
                self.failed += 1;
                println!("FAIL {name}: {e}");
            }
        }
    }

    fn memory(&self, kind: pb::MemoryType, content: &str) -> pb::Memory {
        pb::Memory { r#type: kind as i32, content: content.into(), agent_id: self.agent.clone(), ..Default::default() }
    }

    async fn settings(&mut self) {
        let change = pb::UpdateConfigRequest {
            agent_id: self.agent.clone(),
            memory_injection: Some(pb::MemoryInjectionConfig { search_limit: Some(7), ..Default::default() }),
            ..Default::default()
        };
        let set = self.client.update_config(&change).await;
        let got = self.client.get_config(&self.agent).await;
        let detail = format!("{set:?} / {got:?}");
        let outcome = set.and_then(|s| got.map(|g| s.memory_injection_overridden
            && g.memory_injection.and_then(|m| m.search_limit) == Some(7)));
        self.check("update_config overrides one agent's search_limit; get_config reads it", outcome, || detail);
    }

    async fn import(&mut self) {
        let mut items: Vec<pb::ImportItem> = (0..5)
            .map(|i| pb::ImportItem { memory: Some(self.memory(pb::MemoryType::Fact,
                &format!("Streamed fact {i}: the build farm has {} runners", i * 3 + 4))), ..Default::default() })
            .collect();
        items[3].memory.as_mut().expect("memory").content = "   ".into(); // rejected
        let mut seen = Vec::new();
        let summary = self.client.import_stream(Items(items.into_iter()), 2, |received, ack| {
            seen.push((received, ack.sequence));
        }).await;
        let detail = format!("{summary:?}, progress {seen:?}");
        let outcome = summary.map(|s| (s.received, s.stored, s.rejected) == (5, 4, 1)
            && s.errors.iter().map(|e| e.index).collect::<Vec<_>>() == [3]
            && seen == [(2, 0), (4, 1), (5, 2)]);
        self.check("import_stream: batches acknowledged in order, summary with absolute error indices", outcome, || detail);
    }

    async fn vault(&mut self) {
        let register = pb::Memory { tier: pb::Tier::Register as i32, topic_id: "mission".into(),
                                    ..self.memory(pb::MemoryType::Goal, "Mission draft: billing on PostgreSQL.") };
        let id = match self.client.upsert(register).await {
            Ok(reply) => reply.memory.map(|m| m.id).unwrap_or_default(),
            Err(e) => return self.check("upsert a register", Err(e), String::new),
        };
        let promote = pb::PromoteToCanonRequest { id: id.clone(), canonical_text: CANON.into(), agent_id: self.agent.clone() };
        let promoted = self.client.promote_to_canon(&promote).await;
        let detail = format!("{promoted:?}");
        self.check("promote_to_canon makes a CANON version 2", promoted.map(|p| p.memory
            .is_some_and(|m| m.tier == pb::Tier::Canon as i32 && m.version == 2)), || detail);
        let history = self.client.get_memory_history(&pb::GetMemoryHistoryRequest {
            id, agent_id: self.agent.clone(), ..Default::default() }).await;
        let detail = format!("{history:?}");
        self.check("get_memory_history records both versions", history.map(|h| h.versions.len() == 2), || detail);
        let snapshot = self.client.get_snapshot(&self.agent).await;
        let detail = format!("{snapshot:?}");
        self.check("get_snapshot holds the canon text", snapshot.map(|s| s.text.contains(CANON)), || detail);
        let agent = self.agent.clone();
        let mut request = pb::VaultStatsRequest { page_size: 1000, ..Default::default() };
        let stats = loop {  // the page that holds the agent's scope, or the last one
            match self.client.vault_stats_page(&request).await {
                Ok(page) if !page.next_page_token.is_empty()
                    && !page.scopes.iter().any(|c| c.agent_id == agent) =>
                    request.page_token = page.next_page_token,
                other => break other,
            }
        };
        let detail = format!("{stats:?}");
        self.check("vault_stats counts the agent's memories", stats.map(|s| s.scopes.iter()
            .any(|c| c.agent_id == agent && c.live == 5)), || detail);
        let scope = self.agent.clone();
        let pairs = self.client.find_consolidation_candidates(&pb::FindConsolidationCandidatesRequest {
            scope: scope.clone(), limit: 5, ..Default::default() }).await;
        self.check("find_consolidation_candidates answers", pairs.map(|_| true), String::new);
        let deletions = self.client.propose_deletions(&pb::ProposeDeletionsRequest { scope }).await;
        self.check("propose_deletions answers", deletions.map(|_| true), String::new);
    }

    async fn turns(&mut self) {
        let channel = format!("{}-channel", self.agent);
        let ask = |text: &str| pb::InjectRequest { agent_id: self.agent.clone(), channel_id: channel.clone(),
                                                   text: text.into(), ..Default::default() };
        let first = self.client.inject(&ask("How many runners does the build farm have?")).await;
        let block = match first {
            Ok(reply) if !reply.block.is_empty() => reply.block,
            other => return self.check("inject returns a block", other.map(|_| false), || "empty block".into()),
        };
        let history = vec![pb::Message { role: pb::Role::User as i32, content: block, ..Default::default() }];
        let pruned = self.client.prune_history(&channel, history, Some(1)).await;
        let detail = format!("{pruned:?}");
        self.check("prune_history with the channel releases the pruned block's turn",
                   pruned.map(|p| p.released_turns == [1] && !p.messages.iter().any(is_block)), || detail);
        let trace = self.client.get_injection_trace(&channel, 1).await;
        let detail = format!("{trace:?}");
        self.check("get_injection_trace shows the turn", trace.map(|t| t.turns.len() == 1 && t.turns[0].turn == 1), || detail);
    }
    /// user_id on a memory, search, inject and the list filter; forget_user, forget_hard.
    async fn users(&mut self) {
        const TEXT: &str = "Alice's dog is called Giruruka and sleeps under her desk.";
        let memory = pb::Memory { user_id: "alice".into(), ..self.memory(pb::MemoryType::Fact, TEXT) };
        let id = match self.client.upsert(memory).await {
            Ok(reply) => reply.memory.map(|m| (m.id, m.user_id)).unwrap_or_default(),
            Err(e) => return self.check("upsert with a user", Err(e), String::new),
        };
        self.check("upsert keeps the user", Ok(id.1 == "alice"), || format!("{id:?}"));
        let id = id.0;
        let list = pb::ListMemoriesRequest { agent_id: self.agent.clone(), user_id: "alice".into(), page_size: 100,
                                             ..Default::default() };
        let listed = self.client.list(&list).await;
        let detail = format!("{listed:?}");
        self.check("list filters by user", listed.map(|l| l.memories.len() == 1 && l.memories[0].id == id), || detail);
        for (user, expected) in [("alice", true), ("bob", false), ("", false)] {
            let found = self.search_finds(user, &id).await;
            self.check(&format!("search as {user:?} finds alice's memory: {expected}"), found.map(|f| f == expected),
                       || "it did not".into());
        }
        for (user, expected) in [("alice", true), ("bob", false)] {
            let request = pb::InjectRequest { agent_id: self.agent.clone(), channel_id: format!("{}-{user}", self.agent),
                                              user_id: user.into(), text: "What is the name of Alice's dog?".into(),
                                              ..Default::default() };
            let shown = self.client.inject(&request).await.map(|r| r.block.contains("Giruruka"));
            self.check(&format!("inject as {user:?} offers alice's memory: {expected}"), shown.map(|s| s == expected),
                       || "it did not".into());
        }
        let first = self.client.forget_user(&self.agent, "alice").await;
        let detail = format!("{first:?}");
        self.check("forget_user erases the user's memory", first.map(|r| r.memories == 1 && r.versions >= 1), || detail);
        let again = self.client.forget_user(&self.agent, "alice").await;
        let detail = format!("{again:?}");
        self.check("forget_user a second time erases nothing", again.map(|r| r == pb::ForgetUserResponse::default()),
                   || detail);
        let plant = self.memory(pb::MemoryType::Fact, "The lobby plant is a ficus watered on Mondays.");
        let erased = match self.client.upsert(plant).await {
            Ok(reply) => reply.memory.map(|m| m.id).unwrap_or_default(),
            Err(e) => return self.check("upsert", Err(e), String::new),
        };
        let forgot = self.client.forget_hard(&erased, "rust-selftest").await;
        self.check("forget_hard answers", forgot.map(|_| true), String::new);
        let got = self.client.get(&erased).await;
        let detail = format!("{got:?}");
        self.check("get of a hard-forgotten memory is NOT_FOUND",
                   Ok(got.as_ref().err().map(Error::code) == Some(Code::NotFound)), || detail);
    }

    /// Does a search as `user` ("" = none) return memory `id`?
    async fn search_finds(&self, user: &str, id: &str) -> Result<bool, Error> {
        let request = pb::SearchRequest { query: "What is the name of Alice's dog?".into(), agent_id: self.agent.clone(),
                                          user_id: user.into(), limit: 10, ..Default::default() };
        Ok(self.client.search(&request).await?.hits.iter().any(|h| h.memory.as_ref().is_some_and(|m| m.id == id)))
    }
}

/// TLS from the --ca, --cert, --key and --server-name flags (none without --ca).
fn tls(flags: &std::collections::HashMap<String, String>) -> Result<Option<Tls>, String> {
    let read = |name: &str| flags.get(name).map(|path| std::fs::read(path).map_err(|e| format!("--{name} {path}: {e}")))
        .transpose();
    let Some(ca_pem) = read("ca")? else { return Ok(None) };
    Ok(Some(Tls { ca_pem, client_cert_pem: read("cert")?, client_key_pem: read("key")?,
                  server_name: flags.get("server-name").cloned() }))
}

async fn run() -> Result<bool, String> {
    let flags = flags::parse(ABOUT, &[
        ("addr", "sidecar address HOST:PORT, unix:PATH or unix:///PATH (default 127.0.0.1:50051)"),
        ("wait", "seconds to wait for the sidecar to be ready (default 30)"),
        ("ca", "CA certificate (PEM) of a TLS sidecar; plaintext without it"),
        ("cert", "client certificate (PEM), for mutual TLS"),
        ("key", "the client certificate's key (PEM)"),
        ("server-name", "the DNS name checked against the sidecar's certificate (default: the host)"),
    ])?;
    let addr = flags.get("addr").cloned().unwrap_or_else(|| "127.0.0.1:50051".into());
    let wait: f64 = flags.get("wait").map_or(Ok(30.0), |w| w.parse()).map_err(|e| format!("--wait: {e}"))?;
    let options = Options { tls: tls(&flags)?, ..Options::default() };
    let client = Client::connect_lazy(&addr, options).map_err(|e| e.to_string())?;
    println!("waiting for the sidecar at {addr}");
    if let Err(e) = client.wait_ready(Duration::from_secs_f64(wait)).await {
        eprintln!("selftest: cannot reach the sidecar at {addr}: {e}");
        std::process::exit(2);
    }
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let agent = format!("rust-selftest-{nanos}");
    let mut session = Session { client: client.with_agent(&agent), agent, passed: 0, failed: 0 };
    session.check("wait_ready returns once the sidecar is SERVING", Ok(true), String::new);
    session.settings().await;
    session.import().await;
    session.vault().await;
    session.turns().await;
    session.users().await;
    println!("{} ok, {} failed", session.passed, session.failed);
    Ok(session.failed == 0)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    match run().await {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(reason) => {
            eprintln!("selftest: {reason}");
            std::process::exit(1);
        }
    }
}
