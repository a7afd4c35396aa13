//! Long sessions: a cold build of ~1M tokens into a 128k budget against raw
//! `encode_ordinary` over the same rendered bytes, a warm incremental turn,
//! planning over 10k chunks, and loading the tokenizer.
//!
//! `cargo bench --bench session`. Inputs come from the deterministic
//! generator in `examples/support/session_gen.rs`.

#[path = "../examples/support/session_gen.rs"]
mod session_gen;

use std::hint::black_box;
use std::time::{Duration, Instant};

use agent_context::tokens::{Encoding, TiktokenCounter};
use agent_context::{ContextBuilder, ContextSession, MemoryChunk, MemoryState, Role};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

/// ~1M tokens: 900 generated turns.
const TURNS: usize = 900;
const BUDGET: usize = 128_000;

fn builder(budget: usize) -> ContextBuilder {
    let mut builder = ContextBuilder::new();
    builder.model("gpt-4o").max_tokens(budget);
    builder
}

/// Every chunk rendered, as one text: what a cold build must tokenize.
fn rendered_text(state: &MemoryState) -> String {
    let all = builder(100_000_000).build(state).expect("fits");
    all.messages
        .iter()
        .map(|m| m.content.as_str())
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn cold_and_warm(c: &mut Criterion) {
    let state = session_gen::session(1, TURNS, 1);
    let text = rendered_text(&state);
    let raw = tiktoken_rs::o200k_base_singleton();
    println!(
        "session: {} chunks, {} rendered bytes, {} tokens",
        state.chunks.len(),
        text.len(),
        raw.encode_ordinary(&text).len()
    );

    let mut group = c.benchmark_group("1m-tokens");
    group
        .sample_size(10)
        .throughput(Throughput::Bytes(text.len() as u64));
    group.bench_function("raw-encode-ordinary", |b| {
        b.iter(|| raw.encode_ordinary(black_box(&text)).len())
    });
    group.bench_function("cold-build-128k", |b| {
        b.iter(|| builder(BUDGET).build(black_box(&state)).unwrap())
    });
    group.finish();

    let mut session = ContextSession::new(builder(BUDGET), state.clone()).unwrap();
    session.build().unwrap();
    let mut rng = session_gen::Rng::new(99);
    let mut next = 0usize;
    let mut group = c.benchmark_group("1m-tokens-warm");
    group.sample_size(50);
    group.bench_function("append-8kb-and-build", |b| {
        // Each turn is taken back (untimed) so that every turn lands on the
        // same ~1M-token session rather than on one that grows by 8 KB a turn.
        b.iter_custom(|iterations| {
            let mut timed = Duration::ZERO;
            for _ in 0..iterations {
                next += 1;
                // ~8 KB of generated prose as a new user turn, so the turn
                // before it may be trimmed.
                let mut text = session_gen::prose(&mut rng, 1_500);
                text.truncate(text.floor_char_boundary(8_000));
                let id = format!("bench-{next}");
                let chunk = MemoryChunk::agent(id.clone(), Role::User, text);
                let start = Instant::now();
                session.push(chunk).unwrap();
                // Dropped inside the timing, as the cold build's result is.
                drop(black_box(session.build().unwrap()));
                timed += start.elapsed();
                session.remove(&id).unwrap();
            }
            timed
        })
    });
    group.finish();
}

fn plan_10k(c: &mut Criterion) {
    let mut state = session_gen::session(2, 1_700, 1);
    state.chunks.truncate(10_000);
    let mut group = c.benchmark_group("plan");
    group.sample_size(20);
    for budget in [BUDGET, 32_000] {
        let mut session = ContextSession::new(builder(budget), state.clone()).unwrap();
        session.build().unwrap();
        // Nothing new: the build is planning and assembling 10k cached chunks.
        group.bench_function(format!("10k-chunks-{budget}"), |b| {
            b.iter(|| session.build().unwrap())
        });
        let mut cold = ContextSession::new(builder(budget), state.clone()).unwrap();
        group.bench_function(format!("10k-chunks-{budget}-fresh-cut"), |b| {
            b.iter(|| {
                cold.forget_previous();
                cold.build().unwrap()
            })
        });
    }
    group.finish();
}

fn tokenizer_load(c: &mut Criterion) {
    // A counter's first use loads the `tiktoken` crate's tables; later uses
    // share them. cl100k_base has not been used in this process yet, so this
    // is that first use, timed once (`benches/startup.rs` times it per process).
    let start = Instant::now();
    TiktokenCounter::new(Encoding::Cl100kBase).expect("cl100k_base loads");
    println!(
        "first use of a cl100k_base counter in this process (tables): {:?}",
        start.elapsed()
    );
    let mut group = c.benchmark_group("tokenizer");
    group.sample_size(10);
    group.bench_function("load-o200k", |b| b.iter(tiktoken::encoding::o200k_base));
    group.finish();
}

criterion_group!(benches, cold_and_warm, plan_10k, tokenizer_load);
criterion_main!(benches);
