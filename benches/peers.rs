//! Exact `o200k_base` counting against the peers, on the same bytes.
//!
//! `cargo bench --features bench --bench peers`. Three corpora, built deterministically:
//! *mixed* (~4 MB of generated agent session text: prose, code, JSON, logs,
//! CJK, emoji), *minified JSON* (~1 MB: a generated session serialized
//! compactly) and *Rust source* (~1 MB: this crate's `src/`, files in path
//! order, repeated). Before anything is timed every peer must give our count
//! on every corpus; a peer that differs stops the bench.

#[path = "../examples/support/session_gen.rs"]
mod session_gen;

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

use agent_context::MemoryState;
use agent_context::tokens::{Encoding, TiktokenCounter, TokenCounter};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const MIXED_BYTES: usize = 4_000_000;
const JSON_BYTES: usize = 1_000_000;
const RUST_BYTES: usize = 1_000_000;

/// Generated turns, one at a time, until `enough` says the session is large.
fn grown_session(seed: u64, enough: impl Fn(&MemoryState) -> bool) -> MemoryState {
    let mut rng = session_gen::Rng::new(seed);
    let mut state = MemoryState::new();
    let mut turn = 0;
    while !enough(&state) {
        // Size checks are costly for JSON; ten turns between them.
        for _ in 0..10 {
            session_gen::push_turn(&mut state, &mut rng, turn, 1);
            turn += 1;
        }
    }
    state
}

fn chunk_texts(state: &MemoryState) -> impl Iterator<Item = &str> {
    state.chunks.iter().filter_map(|c| c.text.as_deref())
}

/// The text bodies of a generated session, joined by blank lines.
fn mixed() -> String {
    let state = grown_session(1, |s| {
        chunk_texts(s).map(|t| t.len() + 2).sum::<usize>() >= MIXED_BYTES
    });
    chunk_texts(&state).collect::<Vec<_>>().join("\n\n")
}

/// A generated session as compact JSON.
fn minified_json() -> String {
    let json = |s: &MemoryState| serde_json::to_string(s).expect("a session serializes");
    json(&grown_session(2, |s| json(s).len() >= JSON_BYTES))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// This crate's sources in path order, repeated up to the size.
fn rust_source() -> String {
    let mut files = Vec::new();
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    files.sort();
    let once: String = files
        .iter()
        .map(|path| std::fs::read_to_string(path).expect("sources are readable"))
        .collect();
    assert!(!once.is_empty(), "src/ holds Rust files");
    let mut text = String::with_capacity(RUST_BYTES + once.len());
    while text.len() < RUST_BYTES {
        text.push_str(&once);
    }
    text
}

/// A counter under test: its name and how it counts `o200k_base` tokens.
type Peer = (&'static str, Box<dyn Fn(&str) -> usize>);

fn peers() -> Vec<Peer> {
    let ours = TiktokenCounter::new(Encoding::O200kBase).expect("o200k_base loads");
    let tiktoken = tiktoken::get_encoding("o200k_base").expect("o200k_base is built in");
    let bpe_openai = bpe_openai::o200k_base();
    let tiktoken_rs = tiktoken_rs::o200k_base_singleton();
    vec![
        ("agent-context", Box::new(move |t: &str| ours.count(t))),
        ("tiktoken", Box::new(move |t: &str| tiktoken.count(t))),
        ("bpe-openai", Box::new(move |t: &str| bpe_openai.count(t))),
        (
            "tiktoken-rs",
            Box::new(move |t: &str| tiktoken_rs.encode_ordinary(t).len()),
        ),
    ]
}

fn compare(c: &mut Criterion) {
    let corpora = [
        ("mixed", mixed()),
        ("minified-json", minified_json()),
        ("rust-source", rust_source()),
    ];
    let peers = peers();
    for (corpus, text) in &corpora {
        let counts: Vec<usize> = peers.iter().map(|(_, count)| count(text)).collect();
        println!("{corpus}: {} bytes, counts {counts:?}", text.len());
        assert!(
            counts.iter().all(|&n| n == counts[0]),
            "{corpus}: peers disagree: {counts:?}"
        );
    }
    let mut group = c.benchmark_group("peers");
    // Two shared cores: few, short samples, enough for stable medians.
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for (corpus, text) in &corpora {
        group.throughput(Throughput::Bytes(text.len() as u64));
        for (name, count) in &peers {
            group.bench_function(format!("{corpus}/{name}"), |b| {
                b.iter(|| count(black_box(text)))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, compare);
criterion_main!(benches);
