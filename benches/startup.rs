//! Start-up: the time to a first count in a fresh process, and the CLI's
//! wall time on a small build.
//!
//! `cargo bench --features bench --bench startup`. Tables load once per process, so every
//! sample runs in a new process: this bench starts itself with
//! `STARTUP_CHILD` naming what to load, and the child reports how long
//! loading `o200k_base` and counting one short text took (process start-up
//! excluded). The peers are timed the same way, with the same allocator
//! (mimalloc, as the CLI). The `cli` group times
//! `agent-context build data/coding-agent.json` end to end.

use std::hint::black_box;
use std::process::Command;
use std::time::{Duration, Instant};

use agent_context::tokens::{Encoding, TiktokenCounter, TokenCounter};
use criterion::{Criterion, SamplingMode, criterion_group};

/// The allocator the CLI ships with, for every counter here: building the
/// tables is mostly small allocations (see the README's start-up rows for
/// the system allocator's figures).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Set in a child to the name of the counter it loads.
const CHILD: &str = "STARTUP_CHILD";
const COUNTERS: [&str; 4] = ["agent-context", "tiktoken", "bpe-openai", "tiktoken-rs"];
const TEXT: &str = "Hello, world: the first count of the process.";

/// Loads `name`'s `o200k_base` tables, counts [`TEXT`], and returns the time taken.
fn first_count(name: &str) -> Duration {
    let start = Instant::now();
    let tokens = match name {
        "agent-context" => TiktokenCounter::new(Encoding::O200kBase)
            .expect("o200k_base loads")
            .count(TEXT),
        "tiktoken" => tiktoken::get_encoding("o200k_base")
            .expect("o200k_base is built in")
            .count(TEXT),
        "bpe-openai" => bpe_openai::o200k_base().count(TEXT),
        "tiktoken-rs" => tiktoken_rs::o200k_base()
            .expect("o200k_base loads")
            .encode_ordinary(TEXT)
            .len(),
        other => panic!("unknown counter {other}"),
    };
    black_box(tokens);
    start.elapsed()
}

/// Runs `name`'s first count in a fresh process of this bench.
fn first_count_in_child(name: &str) -> Duration {
    let exe = std::env::current_exe().expect("the bench knows its path");
    let out = Command::new(exe)
        .env(CHILD, name)
        .output()
        .expect("the bench can start itself");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let nanos: u64 = stdout
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("child {name} printed {stdout:?}"));
    Duration::from_nanos(nanos)
}

fn first_counts(c: &mut Criterion) {
    let mut group = c.benchmark_group("first-count");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_secs(2));
    for name in COUNTERS {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| (0..iters).map(|_| first_count_in_child(name)).sum())
        });
    }
    group.finish();
}

fn cli(c: &mut Criterion) {
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/data/coding-agent.json");
    let mut group = c.benchmark_group("cli");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_secs(2));
    group.bench_function("build-coding-agent", |b| {
        b.iter(|| {
            let out = Command::new(env!("CARGO_BIN_EXE_agent-context"))
                .args(["build", data])
                .output()
                .expect("the CLI runs");
            assert!(out.status.success(), "{out:?}");
        })
    });
    group.finish();
}

criterion_group!(benches, first_counts, cli);

fn main() {
    if let Ok(name) = std::env::var(CHILD) {
        println!("{}", first_count(&name).as_nanos());
        return;
    }
    benches();
    criterion::Criterion::default()
        .configure_from_args()
        .final_summary();
}
