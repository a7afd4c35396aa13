//! Counting hostile shapes of text against session text of the same size,
//! and building with a huge tool result of one letter against one of log
//! lines.
//!
//! `cargo bench --features bench --bench long_runs`. Every text is 8 MB (`count` group) or
//! 50 MB (`build` group), generated deterministically. Besides criterion's
//! estimates it prints each shape's median over session text's (count) and
//! the one-letter build's over the log's (build): the targets are at most
//! 2x and about 1x.

#[path = "../examples/support/session_gen.rs"]
mod session_gen;

use std::hint::black_box;
use std::time::{Duration, Instant};

use agent_context::tokens::{Encoding, TiktokenCounter, TokenCounter};
use agent_context::{ChunkKind, ContextBuilder, MemoryChunk, MemoryState, Role};
use criterion::{Criterion, criterion_group, criterion_main};

const COUNT_BYTES: usize = 8 << 20;
const BUILD_BYTES: usize = 50 << 20;

/// A tiny deterministic generator (xorshift), for the random shapes.
struct Bits(u64);

impl Bits {
    fn next(&mut self) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as usize
    }

    /// `bytes` characters drawn from `alphabet`.
    fn text(&mut self, alphabet: &str, bytes: usize) -> String {
        let chars: Vec<char> = alphabet.chars().collect();
        let mut text = String::with_capacity(bytes + 4);
        while text.len() < bytes {
            text.push(chars[self.next() % chars.len()]);
        }
        text
    }
}

/// The text bodies of generated sessions, joined by blank lines, cut to
/// `bytes` (at a char boundary).
fn session_text(bytes: usize) -> String {
    let mut rng = session_gen::Rng::new(7);
    let mut state = MemoryState::new();
    let mut text = String::new();
    let mut turn = 0;
    while text.len() < bytes {
        session_gen::push_turn(&mut state, &mut rng, turn, 1);
        turn += 1;
        for body in state.chunks.drain(..).filter_map(|c| c.text) {
            text.push_str(&body);
            text.push_str("\n\n");
        }
    }
    text.truncate(text.floor_char_boundary(bytes));
    text
}

/// Log lines, as a tool result of a `cat` of a log file would hold them.
fn log_text(bytes: usize) -> String {
    let mut bits = Bits(0x2545_f491_4f6c_dd1d);
    let levels = ["INFO", "WARN", "ERROR", "DEBUG"];
    let words = [
        "request",
        "GET",
        "POST",
        "/api/v1/users",
        "200",
        "404",
        "latency",
        "retry",
    ];
    let mut text = String::with_capacity(bytes + 200);
    while text.len() < bytes {
        let n = bits.next();
        text.push_str(&format!(
            "2026-11-26T12:{:02}:{:02}.{:03}Z [{}] {} {} id={}\n",
            n % 60,
            n / 60 % 60,
            n % 1000,
            levels[n % 4],
            words[n % 8],
            words[n / 8 % 8],
            n % 1_000_000_007
        ));
    }
    text.truncate(bytes);
    text
}

fn shapes() -> Vec<(&'static str, String)> {
    let mut bits = Bits(0x9e37_79b9_7f4a_7c15);
    let repeat = |unit: &str| unit.repeat(COUNT_BYTES / unit.len());
    let base64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    vec![
        ("session-text", session_text(COUNT_BYTES)),
        ("one-letter", repeat("A")),
        ("digits", bits.text("0123456789", COUNT_BYTES)),
        ("hex", bits.text("0123456789abcdef", COUNT_BYTES)),
        ("base64", bits.text(base64, COUNT_BYTES)),
        (
            "random-letters",
            bits.text("abcdefghijklmnopqrstuvwxyz", COUNT_BYTES),
        ),
        ("spaces", repeat(" ")),
        ("equals-signs", repeat("=")),
        ("cjk", repeat("漢")),
        ("emoji", repeat("🦀")),
    ]
}

/// Times `f` as criterion's `name`, keeping every sample's time for the
/// median (`None` when a filter left it out).
fn timed(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    mut f: impl FnMut(),
) -> Option<Duration> {
    let mut times = Vec::new();
    group.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                f();
            }
            let took = start.elapsed();
            times.push(took / iters.max(1) as u32);
            took
        })
    });
    times.sort();
    times.get(times.len() / 2).copied()
}

fn count(c: &mut Criterion) {
    let counter = TiktokenCounter::new(Encoding::O200kBase).expect("o200k_base loads");
    let mut group = c.benchmark_group("count-8mb");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    let mut medians = Vec::new();
    for (name, text) in shapes() {
        let median = timed(&mut group, name, || {
            black_box(counter.count(black_box(&text)));
        });
        medians.push((name, median));
    }
    group.finish();
    let Some((_, Some(base))) = medians.first() else {
        return;
    };
    for (name, median) in &medians {
        if let Some(median) = median {
            let ratio = median.as_secs_f64() / base.as_secs_f64();
            eprintln!("count 8 MB {name}: {median:.1?}, {ratio:.2}x session text");
        }
    }
}

/// A user message, a `cat` call and its result of `body`.
fn dump(body: String) -> MemoryState {
    MemoryState::new()
        .with_chunk(MemoryChunk::agent("u1", Role::User, "dump it"))
        .with_chunk(
            MemoryChunk::new("t1", ChunkKind::Workflow)
                .with_call_id("k")
                .with_tool("cat"),
        )
        .with_chunk(
            MemoryChunk::new("r1", ChunkKind::Environment)
                .with_call_id("k")
                .with_text(body),
        )
}

fn build(c: &mut Criterion) {
    let mut builder = ContextBuilder::new();
    builder.max_tokens(20_000);
    let mut group = c.benchmark_group("build-50mb");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(10));
    let mut medians = Vec::new();
    for (name, state) in [
        ("log", dump(log_text(BUILD_BYTES))),
        ("one-letter", dump("A".repeat(BUILD_BYTES))),
    ] {
        let median = timed(&mut group, name, || {
            let result = builder.build(black_box(&state)).expect("the dump builds");
            assert_eq!(result.truncated().count(), 1);
        });
        medians.push((name, median));
    }
    group.finish();
    if let [(_, Some(log)), (_, Some(letter))] = medians[..] {
        let ratio = letter.as_secs_f64() / log.as_secs_f64();
        eprintln!("build 50 MB tool result: log {log:.1?}, one letter {letter:.1?}: {ratio:.2}x");
    }
}

criterion_group!(benches, count, build);
criterion_main!(benches);
