//! Exact `o200k_base` counting against the peers, on the same bytes.
//!
//! `cargo bench --features bench --bench peers`. Four corpora, built
//! deterministically (`examples/support/corpora.rs`): *mixed* (4 MB of
//! generated agent session text: prose, code, JSON, logs, CJK, emoji),
//! *minified JSON* (1 MB: a generated session serialized compactly), *Rust
//! source* (1 MB: this crate's `src/`, files in path order, repeated) and
//! *real files* (4 MB of this machine's text files: the cargo registry's
//! sources, the Python standard library and /usr/share/doc, shuffled with a
//! fixed seed). Each is counted in one call, on one thread. Before anything
//! is timed every peer must give our count on every corpus; a peer that
//! differs stops the bench. Whole processes counting files are in the
//! `count_files` bench.

#[path = "../examples/support/corpora.rs"]
mod corpora;
#[path = "../examples/support/session_gen.rs"]
mod session_gen;

use std::hint::black_box;
use std::time::Duration;

use agent_context::tokens::{Encoding, TiktokenCounter, TokenCounter};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

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
        ("mixed", corpora::mixed(4_000_000)),
        ("minified-json", corpora::minified_json(1_000_000)),
        ("rust-source", corpora::rust_source(1_000_000)),
        ("real-files", corpora::real_files(4_000_000)),
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
