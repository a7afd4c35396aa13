//! The window's HTML page (`--html`, `adapter::html::window_page`) of a
//! large window: 10,000 chunks (an instruction, 4,999 tool steps of a
//! call and a result of a few hundred tokens, an answer) under a budget
//! that keeps them all, built once; the page is what is timed.
//!
//! `cargo bench --features bench --bench html`. Besides criterion's
//! estimate it prints the page's size in MB, what the size is made of
//! (the chunks' texts, escaped, in their folds; the rest of the rows'
//! markup), and its own median of the page's time, against the targets:
//! under 5 MB and under 1 s.

#[path = "../examples/support/session_gen.rs"]
mod session_gen;

use std::hint::black_box;
use std::time::{Duration, Instant};

use agent_context::adapter::html::window_page;
use agent_context::{BuildResult, ChunkKind, ContextBuilder, MemoryChunk, MemoryState, Role};
use criterion::{Criterion, SamplingMode, criterion_group, criterion_main};
use serde_json::json;
use session_gen::{Rng, prose};

const CHUNKS: usize = 10_000;
const TARGET_BYTES: usize = 5_000_000;
const TARGET_TIME: Duration = Duration::from_secs(1);

/// The window: an instruction, tool steps, an answer; `CHUNKS` chunks.
fn window() -> MemoryState {
    let mut rng = Rng::new(42);
    let mut state = MemoryState::new()
        .with_system_prompt("You are a coding agent. Call tools until the task is done.")
        .with_chunk(MemoryChunk::agent(
            "instruction",
            Role::User,
            "Find why the cache misses and fix it.",
        ));
    for step in 0..(CHUNKS - 2) / 2 {
        let call_id = format!("call_{step}");
        let words = rng.range(120, 330);
        state = state
            .with_chunk(
                MemoryChunk::new(format!("s{step}-call"), ChunkKind::Workflow)
                    .with_tool("bash")
                    .with_call_id(&call_id)
                    .with_data(json!({"command": format!("grep -rn cache src/module_{step}.rs")})),
            )
            .with_chunk(
                MemoryChunk::new(format!("s{step}-result"), ChunkKind::Environment)
                    .with_tool("bash")
                    .with_call_id(&call_id)
                    .with_text(prose(&mut rng, words)),
            );
    }
    state.with_chunk(MemoryChunk::agent(
        "answer",
        Role::Assistant,
        "The key omitted the model; fixed.",
    ))
}

/// The window built under a budget that keeps every chunk whole.
fn built(state: &MemoryState) -> BuildResult {
    let mut builder = ContextBuilder::new();
    builder
        .model("gpt-4o")
        .max_tokens(8_000_000)
        .reserve_output(0);
    let started = Instant::now();
    let result = builder.build(state).expect("fits");
    let kept = result.decisions.iter().filter(|d| d.is_included()).count();
    assert_eq!(kept, CHUNKS, "the budget keeps every chunk");
    assert_eq!(result.truncated().count(), 0, "and cuts none");
    eprintln!(
        "built {CHUNKS} chunks, {} tokens, in {:.2?}",
        result.token_count,
        started.elapsed()
    );
    result
}

/// What the page's bytes are: the texts in the `<pre>` folds, and the
/// rest (rows, bars, facts, style).
fn sizes(page: &str, result: &BuildResult) {
    let texts: usize = page
        .split("<pre>")
        .skip(1)
        .map(|rest| rest.find("</pre>").unwrap_or(0))
        .sum();
    let prompt: usize = result.messages.iter().map(|m| m.content.len()).sum();
    let rows = page.matches("<tr data-chunk=").count();
    let mb = |bytes: usize| bytes as f64 / 1e6;
    eprintln!(
        "page: {:.2} MB (target under {:.0} MB): texts in <pre> {:.2} MB (the prompt's \
         messages are {:.2} MB), the rest {:.2} MB, {} chunk rows of {:.0} bytes each besides \
         their text",
        mb(page.len()),
        mb(TARGET_BYTES),
        mb(texts),
        mb(prompt),
        mb(page.len() - texts),
        rows,
        (page.len() - texts) as f64 / rows.max(1) as f64
    );
    if page.len() > TARGET_BYTES {
        eprintln!(
            "page over target by {:.2} MB ({:.0}%)",
            mb(page.len() - TARGET_BYTES),
            (page.len() - TARGET_BYTES) as f64 * 100.0 / TARGET_BYTES as f64
        );
    }
}

fn html(c: &mut Criterion) {
    let state = window();
    let result = built(&state);
    let page = window_page(&result, Some(&state));
    sizes(&page, &result);
    drop(page);

    let mut group = c.benchmark_group("html");
    group.sample_size(10).sampling_mode(SamplingMode::Flat);
    let mut times = Vec::new();
    group.bench_function("window_page-10k-chunks", |b| {
        b.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for _ in 0..iterations {
                let started = Instant::now();
                let page = window_page(black_box(&result), Some(black_box(&state)));
                let took = started.elapsed();
                black_box(page.len());
                times.push(took);
                total += took;
            }
            total
        })
    });
    group.finish();
    times.sort();
    let median = times[times.len() / 2];
    eprintln!(
        "window_page: median {median:.1?} over {} runs (target under {TARGET_TIME:?})",
        times.len()
    );
}

criterion_group!(benches, html);
criterion_main!(benches);
