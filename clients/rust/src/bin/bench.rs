//! Times N sequential Inject calls and prints
//! "bench inject n=N p50_us=.. p99_us=.. mean_us=.. max_us=.. server_p50_us=..".
//!
//!     bench --addr 127.0.0.1:50051 --bench 1000 [--queries FILE] [--agent ID]
#[path = "common/flags.rs"]
mod flags;

use std::time::{Duration, Instant};

use memsidecar_client::{pb, Client, Options};

const WARMUP: usize = 10;
const ABOUT: &str = "bench: times N sequential Inject calls and prints their percentiles.";

fn nearest_rank(sorted: &[u128], q: f64) -> u128 {
    let rank = (q / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn queries(path: Option<&String>) -> Result<Vec<String>, String> {
    let Some(path) = path else {
        return Ok(vec!["Which database did we pick for the billing service?".to_string()]);
    };
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let out: Vec<String> = text.lines().filter(|l| !l.is_empty()).map(str::to_string).collect();
    if out.is_empty() { Err(format!("{path} holds no query")) } else { Ok(out) }
}

async fn run() -> Result<(), String> {
    let flags = flags::parse(ABOUT, &[
        ("addr", "sidecar address HOST:PORT, unix:PATH or unix:///PATH (default 127.0.0.1:50051)"),
        ("bench", "number of timed Inject calls (default 1000)"),
        ("queries", "file of queries, one a line (default: one fixed query)"),
        ("agent", "agent id of the calls (default agent-a)"),
    ])?;
    let addr = flags.get("addr").cloned().unwrap_or_else(|| "127.0.0.1:50051".into());
    let n: usize = flags.get("bench").map_or(Ok(1000), |v| v.parse()).map_err(|e| format!("--bench: {e}"))?;
    let agent = flags.get("agent").cloned().unwrap_or_else(|| "agent-a".into());
    let queries = queries(flags.get("queries"))?;
    let options = Options { timeout: Duration::from_secs(30), ..Options::default() };
    let client = Client::connect(&addr, options).await.map_err(|e| e.to_string())?;
    let (mut local, mut server) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n + WARMUP {
        let request = pb::InjectRequest { agent_id: agent.clone(), channel_id: format!("bench-rust-{}-{i}", std::process::id()),
                                          text: queries[i % queries.len()].clone(), source: "rust-bench".into(), ..Default::default() };
        let start = Instant::now();
        let reply = client.inject(&request).await.map_err(|e| e.to_string())?;
        let elapsed = start.elapsed().as_micros();
        if i >= WARMUP {
            local.push(elapsed);
            server.push(u128::from(reply.stats.map_or(0, |s| s.elapsed_us)));
        }
    }
    let mean = local.iter().sum::<u128>() / n.max(1) as u128;
    local.sort_unstable();
    server.sort_unstable();
    println!("bench inject n={n} p50_us={} p99_us={} mean_us={mean} max_us={} server_p50_us={}",
             nearest_rank(&local, 50.0), nearest_rank(&local, 99.0), nearest_rank(&local, 100.0),
             nearest_rank(&server, 50.0));
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    if let Err(reason) = run().await {
        println!("FAIL {reason}");
        std::process::exit(1);
    }
}
