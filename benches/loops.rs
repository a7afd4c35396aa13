//! An autonomous agent loop: one instruction, then a thousand model calls
//! with tool calls and results. A warm turn (the 1,000th step pushed to a
//! session that built the first 999, one build each, then built) beside its
//! floor, counting the new step's text alone with the same tokenizer.
//!
//! `cargo bench --features bench --bench loops`. The loop comes from the deterministic
//! generator in `examples/support/session_gen.rs` (`agent_loop`).

#[path = "../examples/support/session_gen.rs"]
mod session_gen;

use std::hint::black_box;
use std::time::Duration;

use agent_context::tokens::{Encoding, TiktokenCounter, TokenCounter};
use agent_context::{ContextBuilder, ContextSession, MemoryChunk};
use criterion::{
    BatchSize, BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group, criterion_main,
};
use session_gen::{LoopShape, agent_loop};

const STEPS: usize = 1_000;
const BUDGET: usize = 128_000;

fn builder(budget: usize) -> ContextBuilder {
    let mut builder = ContextBuilder::new();
    builder.model("gpt-4o").max_tokens(budget);
    builder
}

/// The bodies of `step`'s chunks, as they are rendered inside their tags.
fn step_text(step: &[MemoryChunk]) -> Vec<String> {
    step.iter()
        .filter_map(|chunk| match (&chunk.text, &chunk.data) {
            (Some(text), _) => Some(text.clone()),
            (None, Some(data)) => Some(serde_json::to_string_pretty(data).unwrap()),
            (None, None) => None,
        })
        .collect()
}

/// A fork of `base` with room to grow, as a live session has (made
/// untimed: a fork copies the session).
fn fork(base: &ContextSession) -> ContextSession {
    let mut session = base.clone();
    session.reserve(64);
    session
}

fn warm_step(c: &mut Criterion) {
    let counter = TiktokenCounter::new(Encoding::O200kBase).expect("o200k_base loads");
    let agent_loop = agent_loop(5, &LoopShape::new(STEPS));
    let (last, steps) = agent_loop.steps.split_last().unwrap();
    let mut base = ContextSession::new(builder(BUDGET), agent_loop.opening.clone()).unwrap();
    for step in steps {
        base.extend(step.iter().cloned()).unwrap();
        base.build().unwrap();
    }
    let text = step_text(last);
    let bytes: usize = text.iter().map(String::len).sum();
    {
        let mut session = fork(&base);
        session.extend(last.iter().cloned()).unwrap();
        let result = session.build().unwrap();
        let stats = session.stats();
        println!(
            "loop: {} chunks, step {STEPS} adds {} chunks of {bytes} bytes ({} tokens counted); \
             prompt {} tokens, {} chunks excluded; extended {}, planned again {}",
            session.state().chunks.len(),
            last.len(),
            stats.tokens_counted,
            result.token_count,
            result.excluded().count(),
            stats.extended,
            stats.replanned,
        );
    }

    let mut group = c.benchmark_group("loop");
    // Each iteration builds on a fresh fork of the same session, so every
    // measured turn is the same turn.
    group
        .sample_size(30)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    group.throughput(Throughput::Elements(1));
    let size = format!("{STEPS}-steps-128k");
    group.bench_function(BenchmarkId::new("push-step-and-build", &size), |b| {
        b.iter_batched(
            || (fork(&base), last.to_vec()),
            |(mut session, step)| {
                session.extend(step).unwrap();
                // Dropped inside the timing, as a runtime drops each turn's result.
                drop(black_box(session.build().unwrap()));
                session
            },
            BatchSize::PerIteration,
        )
    });
    // The same fork, untimed, leaves the caches as cold as the turn has them.
    group.bench_function(BenchmarkId::new("floor-count-step", &size), |b| {
        b.iter_batched(
            || fork(&base),
            |session| {
                let tokens: usize = text.iter().map(|t| counter.count(black_box(t))).sum();
                black_box(tokens);
                session
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

criterion_group!(benches, warm_step);
criterion_main!(benches);
