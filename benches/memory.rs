//! Peak memory of a session of ~1M tokens against the bytes of its text.
//!
//! `cargo bench --bench memory` (Linux: reads `/proc/self/status`). The
//! tokenizer tables are loaded first and left out of the figure; the peak
//! then covers generating the session, caching every rendered chunk, and a
//! cold and a warm build with their results alive.

#[path = "../examples/support/session_gen.rs"]
mod session_gen;

use agent_context::budget::Policy;
use agent_context::{ContextBuilder, ContextSession, MemoryChunk, MemoryState, Role};

fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn text_bytes(state: &MemoryState) -> usize {
    state
        .chunks
        .iter()
        .map(|c| match (&c.text, &c.data) {
            (Some(text), _) => text.len(),
            (None, Some(data)) => data.to_string().len(),
            (None, None) => 0,
        })
        .sum()
}

fn main() {
    // Load the tables, then reset the high-water mark so it covers the session only.
    let mut builder = ContextBuilder::new();
    builder.model("gpt-4o").max_tokens(128_000);
    builder
        .build(&MemoryState::new().with_chunk(MemoryChunk::agent("x", Role::User, "hi")))
        .unwrap();
    let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    let (Some(baseline), true) = (status_kib("VmRSS:"), reset) else {
        println!("memory: /proc/self/status or clear_refs unavailable; skipped");
        return;
    };

    let state = session_gen::session(1, 900, 1);
    let bytes = text_bytes(&state);
    let input = status_kib("VmRSS:").unwrap_or(0).saturating_sub(baseline) * 1024;
    let mut session = ContextSession::new(builder, state).unwrap();
    let policy = Policy::default();
    let cold = session.build(&policy).unwrap();
    session
        .push(MemoryChunk::agent("next", Role::User, "And now?"))
        .unwrap();
    let warm = session.build(&policy).unwrap();
    let peak = status_kib("VmHWM:").unwrap_or(0).saturating_sub(baseline) * 1024;
    let mb = |b: u64| b as f64 / 1e6;
    println!(
        "memory: session text {:.1} MB in {} chunks (results of {} and {} tokens alive)",
        mb(bytes as u64),
        session.state().chunks.len(),
        cold.token_count,
        warm.token_count,
    );
    println!(
        "  the MemoryState as parsed: {:.1} MB = {:.2}x the text",
        mb(input),
        input as f64 / bytes as f64
    );
    println!(
        "  peak with the session's cache and two builds: {:.1} MB = {:.2}x the text ({:.2}x added by the session)",
        mb(peak),
        peak as f64 / bytes as f64,
        peak.saturating_sub(input) as f64 / bytes as f64
    );
}
