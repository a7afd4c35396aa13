//! Long sessions: cold builds of 1M to 10M tokens into a 128k budget (on
//! one thread, the default, and on two) beside one pass of our own counting
//! (and of tiktoken-rs's `encode_ordinary`) over the same rendered bytes;
//! warm turns at 250k, 1M and 10M tokens
//! beside their floor, tokenizing only the new turn; a warm turn with a
//! custom renderer, deterministic or not; 10k chunks built
//! again with nothing new, and through the full pipeline with the cut
//! forgotten; loading the tokenizer.
//!
//! `cargo bench --features bench --bench session`. Inputs come from the deterministic
//! generator in `examples/support/session_gen.rs`.

#[path = "../examples/support/session_gen.rs"]
mod session_gen;

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_context::render::{ChunkRenderer, RenderContext};
use agent_context::tokens::{Encoding, TiktokenCounter, TokenCounter};
use agent_context::{ChunkKind, ContextBuilder, ContextSession, MemoryChunk, MemoryState, Role};
use criterion::{
    BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group, criterion_main,
};

/// Generated turns per million tokens.
const TURNS_PER_MILLION: usize = 900;
const BUDGET: usize = 128_000;

fn builder(budget: usize) -> ContextBuilder {
    let mut builder = ContextBuilder::new();
    builder.model("gpt-4o").max_tokens(budget);
    builder
}

/// A generated session of about `millions` million tokens.
fn session_of(millions: f64) -> MemoryState {
    session_gen::session(1, (millions * TURNS_PER_MILLION as f64) as usize, 1)
}

/// Every chunk rendered, as one text: what a cold build must tokenize.
fn rendered_text(state: &MemoryState) -> String {
    let all = builder(usize::MAX / 2).build(state).expect("fits");
    all.messages
        .iter()
        .map(|m| m.content.as_str())
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn cold(c: &mut Criterion) {
    let ours = TiktokenCounter::new(Encoding::O200kBase).expect("o200k_base loads");
    let raw = tiktoken_rs::o200k_base_singleton();
    let mut group = c.benchmark_group("cold");
    group.sample_size(10).sampling_mode(SamplingMode::Flat);
    for millions in [1.0, 2.0, 4.0, 10.0] {
        let state = session_of(millions);
        let text = rendered_text(&state);
        let tokens = ours.count(&text);
        println!(
            "cold {millions}M: {} chunks, {} rendered bytes, {tokens} tokens",
            state.chunks.len(),
            text.len(),
        );
        let size = format!("{tokens}-tokens");
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_function(BenchmarkId::new("our-count", &size), |b| {
            b.iter(|| ours.count(black_box(&text)))
        });
        if millions == 1.0 {
            group.bench_function(BenchmarkId::new("raw-encode-ordinary", &size), |b| {
                b.iter(|| raw.encode_ordinary(black_box(&text)).len())
            });
        }
        group.bench_function(BenchmarkId::new("build-128k", &size), |b| {
            b.iter(|| builder(BUDGET).build(black_box(&state)).unwrap())
        });
        group.bench_function(BenchmarkId::new("build-128k-2-threads", &size), |b| {
            b.iter(|| {
                let mut builder = builder(BUDGET);
                builder.threads(2).build(black_box(&state)).unwrap()
            })
        });
    }
    group.finish();
}

/// ~8 KB of generated prose: a new user turn.
fn user_turn(rng: &mut session_gen::Rng) -> String {
    let mut text = session_gen::prose(rng, 1_500);
    text.truncate(text.floor_char_boundary(8_000));
    text
}

/// A fork of `base` with room to grow, as a live session has (made
/// untimed: a fork copies the session).
fn fork(base: &ContextSession) -> ContextSession {
    let mut session = base.clone();
    session.reserve(64);
    session
}

/// How the turns of a bench were built.
#[derive(Default)]
struct Paths {
    extended: usize,
    replanned: usize,
    full: usize,
}

impl Paths {
    fn count(&mut self, session: &ContextSession) {
        let stats = session.stats();
        match (stats.extended, stats.replanned) {
            (true, _) => self.extended += 1,
            (_, true) => self.replanned += 1,
            _ => self.full += 1,
        }
    }
}

/// Turns per block of the amortized bench: two trims' worth at 2k tokens
/// a turn into a 128k budget with the default 80% low-water mark.
const BLOCK: usize = 36;

fn warm(c: &mut Criterion) {
    let counter = TiktokenCounter::new(Encoding::O200kBase).expect("o200k_base loads");
    let mut rng = session_gen::Rng::new(99);
    let mut group = c.benchmark_group("warm");
    // Each measurement starts on a fork of the same session, so turns are
    // alike whatever the session's size; every fork, the floor's too,
    // leaves the caches as cold. A short warm-up and measurement keep the
    // forks of the 10M session affordable.
    group
        .sample_size(20)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(100))
        .measurement_time(Duration::from_millis(400));
    for millions in [0.25, 1.0, 10.0] {
        let state = session_of(millions);
        let chunks = state.chunks.len();
        let mut base = ContextSession::new(builder(BUDGET), state).unwrap();
        let cold = base.build().unwrap();
        let size = format!("{}k-tokens", (millions * 1000.0) as usize);
        println!(
            "warm {size}: {chunks} chunks, prompt {} tokens",
            cold.token_count
        );
        let mut paths = Paths::default();
        group.throughput(Throughput::Elements(1));
        group.bench_function(BenchmarkId::new("append-8kb-and-build", &size), |b| {
            b.iter_custom(|iterations| {
                let mut timed = Duration::ZERO;
                for _ in 0..iterations {
                    let mut session = fork(&base);
                    let chunk = MemoryChunk::agent("bench-turn", Role::User, user_turn(&mut rng));
                    let start = Instant::now();
                    session.push(chunk).unwrap();
                    // Dropped inside the timing, as the cold build's result is.
                    drop(black_box(session.build().unwrap()));
                    timed += start.elapsed();
                    paths.count(&session);
                }
                timed
            })
        });
        group.bench_function(BenchmarkId::new("floor-count-8kb", &size), |b| {
            b.iter_custom(|iterations| {
                let mut timed = Duration::ZERO;
                for _ in 0..iterations {
                    let session = fork(&base);
                    let text = user_turn(&mut rng);
                    let start = Instant::now();
                    black_box(counter.count(black_box(&text)));
                    timed += start.elapsed();
                    drop(session);
                }
                timed
            })
        });
        group.throughput(Throughput::Elements(BLOCK as u64));
        group.bench_function(BenchmarkId::new("36-turns-with-trims", &size), |b| {
            b.iter_custom(|iterations| {
                let mut timed = Duration::ZERO;
                for _ in 0..iterations {
                    let mut session = fork(&base);
                    for turn in 0..BLOCK {
                        let text = user_turn(&mut rng);
                        let user = MemoryChunk::agent(format!("bench-u{turn}"), Role::User, text);
                        let start = Instant::now();
                        session.push(user).unwrap();
                        drop(black_box(session.build().unwrap()));
                        timed += start.elapsed();
                        paths.count(&session);
                        let reply =
                            MemoryChunk::agent(format!("bench-a{turn}"), Role::Assistant, "Done.");
                        session.push(reply).unwrap();
                    }
                }
                timed
            })
        });
        println!(
            "warm {size}: turns extended {}, planned again {}, built in full {}",
            paths.extended, paths.replanned, paths.full
        );
    }
    group.finish();
}

/// Draws thoughts as `<note>` elements; `deterministic` is what it says
/// of itself.
struct NoteRenderer {
    deterministic: bool,
}

impl ChunkRenderer for NoteRenderer {
    fn can_render(&self, chunk: &MemoryChunk) -> bool {
        chunk.kind == ChunkKind::Thinking
    }

    fn role(&self, _chunk: &MemoryChunk) -> Role {
        Role::Assistant
    }

    fn render(&self, chunk: &MemoryChunk, ctx: &RenderContext<'_>, out: &mut String) {
        let attributes = [("id", Some(chunk.id.as_str()))];
        ctx.write_element(out, "note", &attributes, chunk.text.as_deref());
    }

    fn tags(&self) -> Vec<String> {
        vec!["note".into()]
    }

    fn deterministic(&self) -> bool {
        self.deterministic
    }
}

/// A warm turn at 250k tokens with the default renderers, with a custom
/// renderer for thoughts, and with one that is not deterministic (every
/// session build renders its chunks again through the full pipeline).
fn custom_renderer(c: &mut Criterion) {
    let mut rng = session_gen::Rng::new(7);
    let mut group = c.benchmark_group("custom-renderer");
    group
        .sample_size(20)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(100))
        .measurement_time(Duration::from_millis(400));
    let state = session_of(0.25);
    for (name, renderer) in [
        ("default", None),
        ("deterministic", Some(true)),
        ("not-deterministic", Some(false)),
    ] {
        let mut builder = builder(BUDGET);
        if let Some(deterministic) = renderer {
            builder.register_renderer(Arc::new(NoteRenderer { deterministic }));
        }
        let mut base = ContextSession::new(builder, state.clone()).unwrap();
        base.build().unwrap();
        let mut paths = Paths::default();
        group.bench_function(BenchmarkId::new("append-8kb-and-build", name), |b| {
            b.iter_custom(|iterations| {
                let mut timed = Duration::ZERO;
                for _ in 0..iterations {
                    let mut session = fork(&base);
                    let chunk = MemoryChunk::agent("bench-turn", Role::User, user_turn(&mut rng));
                    let start = Instant::now();
                    session.push(chunk).unwrap();
                    drop(black_box(session.build().unwrap()));
                    timed += start.elapsed();
                    paths.count(&session);
                }
                timed
            })
        });
        println!(
            "custom-renderer {name}: turns extended {}, planned again {}, built in full {}",
            paths.extended, paths.replanned, paths.full
        );
    }
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
        // Nothing new: the build extends the last one by no chunks.
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
    // A counter's first count loads the `tiktoken` crate's tables; later
    // counts share them. cl100k_base has not counted in this process yet, so
    // this is that first count, timed once (`benches/startup.rs` times it per
    // process).
    let start = Instant::now();
    TiktokenCounter::new(Encoding::Cl100kBase)
        .expect("cl100k_base loads")
        .count("a first count");
    println!(
        "first use of a cl100k_base counter in this process (tables): {:?}",
        start.elapsed()
    );
    let mut group = c.benchmark_group("tokenizer");
    group.sample_size(10);
    group.bench_function("load-o200k", |b| b.iter(tiktoken::encoding::o200k_base));
    group.finish();
}

criterion_group!(
    benches,
    warm,
    custom_renderer,
    cold,
    plan_10k,
    tokenizer_load
);
criterion_main!(benches);
