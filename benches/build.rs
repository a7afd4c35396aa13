//! Counting and building, measured on the bundled sessions.
//!
//! `cargo bench --features bench --bench build`. Counting is compared with tiktoken-rs's raw
//! `encode_ordinary` on the same bytes (`benches/peers.rs` compares every peer).

use std::hint::black_box;

use agent_context::render::{EscapeMode, RendererRegistry};
use agent_context::tokens::{Encoding, TiktokenCounter, TokenCounter};
use agent_context::{ContextBuilder, MemoryState};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn sessions() -> Vec<(&'static str, MemoryState)> {
    ["coding-agent", "research-agent"]
        .into_iter()
        .map(|name| {
            let path = format!("{}/data/{name}.json", env!("CARGO_MANIFEST_DIR"));
            let json = std::fs::read_to_string(&path).expect("bundled data is present");
            (
                name,
                MemoryState::from_json_str(&json).expect("bundled data is valid"),
            )
        })
        .collect()
}

/// Bytes of the sessions' text bodies, for throughput.
fn text_bytes(state: &MemoryState) -> u64 {
    state
        .chunks
        .iter()
        .filter_map(|c| c.text.as_deref())
        .map(|t| t.len() as u64)
        .sum()
}

fn count(c: &mut Criterion) {
    let counter = TiktokenCounter::new(Encoding::O200kBase).unwrap();
    let raw = tiktoken_rs::o200k_base_singleton();
    let mut group = c.benchmark_group("count");
    for (name, state) in sessions() {
        let text: String = state
            .chunks
            .iter()
            .filter_map(|c| c.text.as_deref())
            .collect();
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_function(format!("{name}/agent-context"), |b| {
            b.iter(|| counter.count(black_box(&text)))
        });
        group.bench_function(format!("{name}/encode_ordinary"), |b| {
            b.iter(|| raw.encode_ordinary(black_box(&text)).len())
        });
    }
    group.finish();
}

fn build(c: &mut Criterion) {
    let mut group = c.benchmark_group("build");
    for (name, state) in sessions() {
        group.throughput(Throughput::Bytes(text_bytes(&state)));
        for budget in [4_000, 128_000] {
            let mut builder = ContextBuilder::new();
            builder.model("gpt-4o").max_tokens(budget);
            group.bench_function(format!("{name}/{budget}"), |b| {
                b.iter(|| builder.build(black_box(&state)))
            });
        }
    }
    group.finish();
}

fn render(c: &mut Criterion) {
    let registry = RendererRegistry::new();
    let mut group = c.benchmark_group("render");
    for (name, state) in sessions() {
        group.throughput(Throughput::Bytes(text_bytes(&state)));
        for mode in [EscapeMode::Structural, EscapeMode::Xml] {
            let ctx = registry.context(mode);
            let mut out = String::new();
            group.bench_function(format!("{name}/{mode}"), |b| {
                b.iter(|| {
                    out.clear();
                    for chunk in &state.chunks {
                        registry.renderer_for(chunk).render(chunk, &ctx, &mut out);
                    }
                    out.len()
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, count, render, build);
criterion_main!(benches);
