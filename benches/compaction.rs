//! What planning and applying a compaction costs as a stored chat grows:
//! on a chat of 1,000 chunks and on one of 1,000,000 (or
//! `AGENT_CONTEXT_SCALE_CHUNKS`), each already compacted up to its newest
//! turns and then grown by the same span, side by side in one run.
//!
//! `cargo bench --features bench --bench compaction`. Each chat is one
//! SQLite file of generated turns (a user message, a tool call, its result
//! and a reply; about 10 tokens each) whose counts are stored as a
//! runtime's would be; a first compaction folds all but its newest turns,
//! then [`SPAN`] more chunks are saved. Each measured iteration forks the
//! branch (untimed), opens a fresh engine on the fork, as a new process
//! would, plans a compaction and applies it with a stand-in summary.
//! Besides criterion's estimates it prints the median of each size and
//! their ratio (large over small).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_context::compaction::{CompactionOptions, CompactionPlan};
use agent_context::store::{self, Store};
use agent_context::{ContextBuilder, ContextEngine, MemoryChunk, Role};
use criterion::{Criterion, criterion_group, criterion_main};

const SMALL: usize = 1_000;
/// The chunks saved after the first compaction: what each plan folds,
/// but for the newest [`KEEP_TOKENS`].
const SPAN: usize = 400;
const KEEP_TOKENS: usize = 1_000;
const SAVE_BATCH: usize = 10_000;

fn builder() -> ContextBuilder {
    let mut builder = ContextBuilder::new();
    builder
        .model("gpt-4o")
        .max_tokens(32_000)
        .reserve_output(1_000);
    builder
}

/// Turn `n`'s chunks, ids prefixed by `prefix`.
fn turn(prefix: &str, n: usize) -> [MemoryChunk; 4] {
    let id = |what: &str| format!("{prefix}{what}{n}");
    [
        MemoryChunk::agent(id("u"), Role::User, format!("Step {n}: check file {n}.rs")),
        MemoryChunk::new(id("c"), agent_context::ChunkKind::Workflow)
            .with_tool("read_file")
            .with_call_id(id("k"))
            .with_text(format!("{{\"path\": \"src/{n}.rs\"}}")),
        MemoryChunk::new(id("r"), agent_context::ChunkKind::Environment)
            .with_tool("read_file")
            .with_call_id(id("k"))
            .with_text(format!("fn f{n}() {{ {n} }}")),
        MemoryChunk::agent(id("a"), Role::Assistant, format!("File {n} looks fine.")),
    ]
}

/// Saves `chunks` chunks of turns to the engine, in batches.
fn grow(engine: &mut ContextEngine, prefix: &str, chunks: usize) {
    let all: Vec<MemoryChunk> = (0..chunks.div_ceil(4))
        .flat_map(|n| turn(prefix, n))
        .collect();
    for batch in all[..chunks].chunks(SAVE_BATCH) {
        engine.extend(batch.iter().cloned()).expect("valid chunks");
        engine.save().expect("saved");
    }
}

fn options() -> CompactionOptions {
    let mut options = CompactionOptions::default();
    options.keep_tokens = Some(KEEP_TOKENS);
    options
}

/// A chat of `chunks` chunks, compacted but for its newest turns, then
/// grown by [`SPAN`] chunks.
fn chat(dir: &Path, chunks: usize) -> Arc<dyn Store> {
    let location = dir.join(format!("{chunks}.db")).display().to_string();
    let store = store::open(&location, true).expect("a store");
    let mut engine = ContextEngine::open(Arc::clone(&store), "chat", builder()).expect("a chat");
    grow(&mut engine, "", chunks);
    // The first compaction reads the whole branch: a window wide enough
    // for all of it folds all but the newest turns.
    let mut first = options();
    first.summarizer_max_tokens = Some(usize::MAX / 4);
    let CompactionPlan::Ready(plan) = engine.plan_compaction(&first).expect("plans") else {
        panic!("nothing to fold in a chat of {chunks} chunks");
    };
    engine
        .apply_compaction(&plan.plan, "Checked the files.")
        .expect("applies");
    grow(&mut engine, "more-", SPAN);
    store
}

/// Forks the chat's main branch, then plans and applies a compaction on
/// the fork through a fresh engine; the time of the latter.
fn plan_and_apply(store: &Arc<dyn Store>, n: usize) -> Duration {
    let mut main = ContextEngine::open(Arc::clone(store), "chat", builder()).expect("the chat");
    let branch = format!("b{n}");
    main.fork(&branch).expect("a fork");
    let start = Instant::now();
    let mut engine = ContextEngine::open_branch(Arc::clone(store), "chat", &branch, builder())
        .expect("the fork");
    let CompactionPlan::Ready(plan) = engine.plan_compaction(&options()).expect("plans") else {
        panic!("nothing to fold");
    };
    engine
        .apply_compaction(&plan.plan, "Checked more files.")
        .expect("applies");
    start.elapsed()
}

fn compaction(c: &mut Criterion) {
    let large: usize = std::env::var("AGENT_CONTEXT_SCALE_CHUNKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("compaction-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("the target directory is writable");
    let chats = [(SMALL, chat(&dir, SMALL)), (large, chat(&dir, large))];
    let mut medians = Vec::new();
    let mut group = c.benchmark_group("compaction");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(5));
    let mut n = 0;
    for (chunks, store) in &chats {
        let mut times = Vec::new();
        group.bench_function(format!("plan+apply/{chunks}"), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    n += 1;
                    let took = plan_and_apply(store, n);
                    times.push(took);
                    total += took;
                }
                total
            })
        });
        times.sort();
        medians.push((*chunks, times[times.len() / 2]));
    }
    group.finish();
    let (small, big) = (medians[0].1, medians[1].1);
    let ratio = big.as_secs_f64() / small.as_secs_f64();
    eprintln!(
        "plan+apply: {small:.1?} on {SMALL} chunks, {big:.1?} on {large}: {ratio:.2}x (target at \
         most 3x)"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, compaction);
criterion_main!(benches);
