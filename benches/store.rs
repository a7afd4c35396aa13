//! Durable chats: appending a turn to a stored 1M-token chat, a fresh
//! process building it beside `agent-context build` on its exported JSON,
//! the same two builds in process, and loading the chat.
//!
//! `cargo bench --features bench --bench store`. The chat is generated once per run by
//! `examples/support/session_gen.rs` and saved through a `ContextEngine`
//! into a SQLite file under the target directory, so the counts the engine
//! keeps are stored beside the chunks as a runtime's would be. Besides
//! criterion's estimates the bench prints what criterion does not: the
//! p99 of single appends, and the ratios of the paired builds (medians of
//! every run, warm-up included; each run is a fresh process or handle).
//! The appends grow a copy of the store, so everything else reads the chat
//! as exported. In process, the tokenizer's tables are loaded once for the
//! whole bench, so the in-process pair leaves out the table load that
//! every fresh process pays, the store's path as much as the JSON's.

#[path = "../examples/support/session_gen.rs"]
mod session_gen;

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_context::store::raw::{NewChunk, Save, nodes};
use agent_context::store::{SqliteStore, Store};
use agent_context::{ContextBuilder, ContextEngine, MemoryState};
use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};

/// Generated turns per million tokens (as in `benches/session.rs`).
const TURNS_PER_MILLION: usize = 900;
const BUDGET: usize = 128_000;
const CHAT: &str = "chat-1m";
/// Appends timed one by one for the percentiles.
const TIMED_APPENDS: usize = 200;
/// Appends a branch takes before the next starts again at the 1M-token
/// head, so the chat stays between 1M and about 1.2M tokens.
const APPENDS_PER_BRANCH: usize = 100;

fn builder() -> ContextBuilder {
    let mut builder = ContextBuilder::new();
    builder.model("gpt-4o").max_tokens(BUDGET);
    builder
}

/// The stored chat and its export, made once per run.
struct Fixture {
    dir: PathBuf,
    db: PathBuf,
    /// A copy of `db` the appends grow, so the builds and loads read the
    /// chat as exported.
    append_db: PathBuf,
    json: PathBuf,
    /// The branch's head after the setup: each append branch starts here.
    head: i64,
    /// Bytes of chunk JSON a load reads.
    chunk_bytes: u64,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("store-bench-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("the target directory is writable");
        let db = dir.join("chats.db");
        let append_db = dir.join("appends.db");
        let json = dir.join("exported.json");

        let state = session_gen::session(1, TURNS_PER_MILLION, 1);
        let tokens = total_tokens(&state);
        let start = Instant::now();
        let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&db).expect("the store opens"));
        let mut engine = ContextEngine::open(store.clone(), CHAT, builder()).expect("chat opens");
        engine.set_system_prompt(state.system_prompt.clone());
        engine
            .extend(state.chunks.iter().cloned())
            .expect("valid chunks");
        engine.save().expect("the chat saves");
        let saved_in = start.elapsed();
        let head = engine.head().expect("the chat has chunks");
        std::fs::write(
            &json,
            serde_json::to_string(engine.state().unwrap()).expect("state serializes"),
        )
        .expect("the export is written");
        let loaded = nodes(&*store)
            .load(CHAT, "main", None)
            .expect("the chat loads");
        let chunk_bytes = loaded.chunks.iter().map(|c| c.json.len() as u64).sum();
        // The last connection's close moves the write-ahead log into the
        // file, which is then whole to copy.
        drop((engine, store));
        assert_eq!(
            file_len(&db.with_extension("db-wal")),
            0,
            "the log is checkpointed"
        );
        std::fs::copy(&db, &append_db).expect("the store copies");
        println!(
            "chat: {} chunks, {tokens} tokens, {chunk_bytes} bytes of chunk JSON; saved with \
             counts in {saved_in:?}; export {} bytes; store {} bytes",
            state.chunks.len(),
            file_len(&json),
            file_len(&db),
        );
        Fixture {
            dir,
            db,
            append_db,
            json,
            head,
            chunk_bytes,
        }
    }

    fn store(&self) -> Arc<dyn Store> {
        Arc::new(SqliteStore::open(&self.db).expect("the store opens"))
    }

    fn append_store(&self) -> Arc<dyn Store> {
        Arc::new(SqliteStore::open(&self.append_db).expect("the store opens"))
    }

    /// How many stored chunks have counts, by count key: the fresh
    /// process must find its own key here to skip tokenizing.
    fn count_keys(&self) -> Vec<(String, i64)> {
        let db = rusqlite::Connection::open(&self.db).expect("the store opens");
        let mut statement = db
            .prepare("SELECT key, COUNT(*) FROM counts GROUP BY key ORDER BY key")
            .expect("the counts table exists");
        statement
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
            .expect("counts are readable")
            .collect::<Result<_, _>>()
            .expect("counts are readable")
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// Tokens of every chunk rendered: the chat's size.
fn total_tokens(state: &MemoryState) -> usize {
    let mut all = builder();
    all.max_tokens(usize::MAX / 2);
    all.build(state).expect("fits").token_count
}

/// An engine kept open between appends, as a runtime keeps it, on a branch
/// of its own at the 1M-token head (the chat's `main` stays as exported),
/// moved to a new one every [`APPENDS_PER_BRANCH`] appends.
struct Appender<'a> {
    fixture: &'a Fixture,
    store: Arc<dyn Store>,
    engine: ContextEngine,
    rng: session_gen::Rng,
    turns: usize,
    branches: usize,
    /// Every timed append.
    times: Vec<Duration>,
}

impl<'a> Appender<'a> {
    fn new(fixture: &'a Fixture) -> Appender<'a> {
        let store = fixture.append_store();
        let engine = branch_at_head(fixture, &store, 0);
        Appender {
            fixture,
            store,
            engine,
            rng: session_gen::Rng::new(7),
            turns: 0,
            branches: 1,
            times: Vec::new(),
        }
    }

    /// Appends one turn and saves it; returns the time of the push and the
    /// save (making the turn and moving branches are not timed).
    fn append(&mut self) -> Duration {
        if self.turns > 0 && self.turns.is_multiple_of(APPENDS_PER_BRANCH) {
            self.engine = branch_at_head(self.fixture, &self.store, self.branches);
            self.branches += 1;
        }
        let chunks = session_gen::appended_turn(&mut self.rng, self.turns);
        self.turns += 1;
        let start = Instant::now();
        self.engine.extend(chunks).expect("valid chunks");
        self.engine.save().expect("the turn saves");
        let time = start.elapsed();
        self.times.push(time);
        time
    }
}

/// An engine on a new branch `bench-{n}` at the fixture's head.
fn branch_at_head(fixture: &Fixture, store: &Arc<dyn Store>, n: usize) -> ContextEngine {
    let name = format!("bench-{n}");
    nodes(store.as_ref())
        .create_branch(CHAT, &name, Some(fixture.head), false)
        .expect("the branch is new");
    ContextEngine::open_branch(store.clone(), CHAT, &name, builder()).expect("the branch opens")
}

/// The value at `fraction` of sorted `times` (nearest rank).
fn percentile(times: &[Duration], fraction: f64) -> Duration {
    let mut sorted = times.to_vec();
    sorted.sort_unstable();
    let rank = ((fraction * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn append(c: &mut Criterion, fixture: &Fixture) {
    let mut appender = Appender::new(fixture);
    let mut rng = session_gen::Rng::new(7);
    let bytes: usize = session_gen::appended_turn(&mut rng, 0)
        .iter()
        .map(|c| serde_json::to_string(c).expect("serializes").len())
        .sum();
    // Percentiles first, one append per timing.
    for _ in 0..TIMED_APPENDS {
        appender.append();
    }
    print_percentiles(
        &format!("append of one turn ({bytes} bytes of chunk JSON) to the 1M-token chat"),
        &appender.times,
    );
    appender.times.clear();
    let mut group = c.benchmark_group("append");
    group.throughput(Throughput::Bytes(bytes as u64));
    group.bench_function("turn-8kb-push-save", |b| {
        b.iter_custom(|iterations| (0..iterations).map(|_| appender.append()).sum())
    });
    print_percentiles("append, criterion's runs", &appender.times);
    println!(
        "append: {} turns appended on {} branches",
        appender.turns, appender.branches
    );

    // The store's part: the same turn as JSON, saved without counts (the
    // SQL and the sync to disk, no rendering or counting).
    let store = fixture.append_store();
    nodes(&*store)
        .create_branch(CHAT, "bench-raw", Some(fixture.head), false)
        .expect("the branch is new");
    let mut head = Some(fixture.head);
    let mut raw_turns = 0;
    let mut raw_times = Vec::new();
    group.bench_function("turn-8kb-store-save-only", |b| {
        b.iter_custom(|iterations| {
            let mut timed = Duration::ZERO;
            for _ in 0..iterations {
                let chunks = session_gen::appended_turn(&mut rng, 1_000_000 + raw_turns)
                    .iter()
                    .map(|c| {
                        let json = serde_json::to_string(c).expect("serializes");
                        NewChunk::new(c.id.clone(), json, None)
                    })
                    .collect();
                raw_turns += 1;
                let save = Save::append("bench-raw", head, chunks);
                let start = Instant::now();
                let saved = nodes(&*store).save(CHAT, &save).expect("the turn saves");
                let time = start.elapsed();
                head = saved.head;
                raw_times.push(time);
                timed += time;
            }
            timed
        })
    });
    group.finish();
    print_percentiles("store save only, criterion's runs", &raw_times);
    println!(
        "appends grew the store to {} bytes",
        file_len(&fixture.append_db) + file_len(&fixture.append_db.with_extension("db-wal"))
    );
}

/// Prints the median and tail of single timings (nothing when a filter
/// left the benchmark out).
fn print_percentiles(what: &str, times: &[Duration]) {
    if times.is_empty() {
        return;
    }
    println!(
        "{what}, {} timed: p50 {:?}, p90 {:?}, p99 {:?}, max {:?}",
        times.len(),
        percentile(times, 0.5),
        percentile(times, 0.9),
        percentile(times, 0.99),
        percentile(times, 1.0),
    );
}

/// Runs the CLI with `args` and returns its wall time; it must succeed.
fn run_cli(args: &[&str]) -> Duration {
    let start = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_agent-context"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .expect("the CLI runs");
    let elapsed = start.elapsed();
    assert!(
        out.status.success(),
        "agent-context {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    elapsed
}

/// The report the CLI prints for `args`: what the build kept.
fn cli_report(args: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_agent-context"))
        .args(args)
        .output()
        .expect("the CLI runs");
    assert!(out.status.success(), "agent-context {args:?}: {out:?}");
    serde_json::from_slice(&out.stdout).expect("the report is JSON")
}

fn median(times: &[Duration]) -> Duration {
    percentile(times, 0.5)
}

/// Prints the medians of paired runs and their ratio (nothing when a
/// filter left them out).
fn print_ratio(what: &str, stored: (&str, &[Duration]), json: (&str, &[Duration])) {
    if stored.1.is_empty() || json.1.is_empty() {
        return;
    }
    let (a, b) = (median(stored.1), median(json.1));
    println!(
        "{what}: {} median {a:?} over {} runs, {} median {b:?} over {} runs; ratio {:.3} \
         (target <= 0.5)",
        stored.0,
        stored.1.len(),
        json.0,
        json.1.len(),
        a.as_secs_f64() / b.as_secs_f64(),
    );
}

fn fresh_process(c: &mut Criterion, fixture: &Fixture) {
    let db = fixture.db.to_str().expect("a UTF-8 path");
    let json = fixture.json.to_str().expect("a UTF-8 path");
    let budget = BUDGET.to_string();
    let stored_args = [
        "chat",
        "build",
        "--db",
        db,
        "--chat",
        CHAT,
        "--max-tokens",
        &budget,
    ];
    let json_args = ["build", json, "--max-tokens", &budget];

    // Both builds must keep the same prompt, and the first `chat build`
    // stores any counts the CLI's settings lack, so the timed ones find them.
    let first = Instant::now();
    let stored = cli_report(&stored_args);
    let first = first.elapsed();
    let exported = cli_report(&json_args);
    for field in ["token_count", "included", "excluded"] {
        assert_eq!(
            stored[field], exported[field],
            "the builds differ in {field}"
        );
    }
    println!(
        "first `chat build` (stores the counts it lacks): {first:?}; prompt {} tokens, {} \
         chunks; counts stored by key: {:?}",
        stored["token_count"],
        stored["included"].as_array().map_or(0, Vec::len),
        fixture.count_keys(),
    );

    let mut group = c.benchmark_group("fresh-process");
    group.sampling_mode(SamplingMode::Flat).sample_size(10);
    let mut stored_runs = Vec::new();
    group.bench_function("chat-build-db-128k", |b| {
        b.iter_custom(|iterations| {
            (0..iterations)
                .map(|_| {
                    let time = run_cli(&stored_args);
                    stored_runs.push(time);
                    time
                })
                .sum()
        })
    });
    let mut json_runs = Vec::new();
    group.bench_function("build-exported-json-128k", |b| {
        b.iter_custom(|iterations| {
            (0..iterations)
                .map(|_| {
                    let time = run_cli(&json_args);
                    json_runs.push(time);
                    time
                })
                .sum()
        })
    });
    group.finish();
    print_ratio(
        "fresh process",
        ("chat build", &stored_runs),
        ("build on JSON", &json_runs),
    );
}

fn in_process(c: &mut Criterion, fixture: &Fixture) {
    let mut group = c.benchmark_group("fresh-in-process");
    group.sampling_mode(SamplingMode::Flat).sample_size(10);
    // Results are dropped outside the timing, in both.
    let mut stored_runs = Vec::new();
    group.bench_function("store-open-build-128k", |b| {
        b.iter_custom(|iterations| {
            let mut timed = Duration::ZERO;
            for _ in 0..iterations {
                let start = Instant::now();
                let mut engine =
                    ContextEngine::open(fixture.store(), CHAT, builder()).expect("chat opens");
                let result = engine.build().expect("builds");
                let time = start.elapsed();
                drop(black_box((engine, result)));
                stored_runs.push(time);
                timed += time;
            }
            timed
        })
    });
    let mut json_runs = Vec::new();
    group.bench_function("json-read-parse-build-128k", |b| {
        b.iter_custom(|iterations| {
            let mut timed = Duration::ZERO;
            for _ in 0..iterations {
                let start = Instant::now();
                let text = std::fs::read_to_string(&fixture.json).expect("the export is there");
                let state = MemoryState::from_json_str(&text).expect("the export parses");
                let result = builder().build(&state).expect("builds");
                let time = start.elapsed();
                drop(black_box((text, state, result)));
                json_runs.push(time);
                timed += time;
            }
            timed
        })
    });
    group.finish();
    print_ratio(
        "in process",
        ("open + build", &stored_runs),
        ("read + parse + build", &json_runs),
    );
}

/// Loading the chat, and the phases of both builds apart.
fn load(c: &mut Criterion, fixture: &Fixture) {
    let mut group = c.benchmark_group("load");
    group.sampling_mode(SamplingMode::Flat).sample_size(10);
    group.throughput(Throughput::Bytes(fixture.chunk_bytes));
    let mut opens = Vec::new();
    group.bench_function("engine-open", |b| {
        b.iter_custom(|iterations| {
            let mut timed = Duration::ZERO;
            for _ in 0..iterations {
                let store = fixture.store();
                let start = Instant::now();
                let engine = ContextEngine::open(store, CHAT, builder()).expect("chat opens");
                let time = start.elapsed();
                drop(black_box(engine));
                opens.push(time);
                timed += time;
            }
            timed
        })
    });
    // The SQL alone: rows read, no chunk decoded (counts not joined).
    group.bench_function("store-load-rows", |b| {
        b.iter_custom(|iterations| {
            let mut timed = Duration::ZERO;
            for _ in 0..iterations {
                let store = fixture.store();
                let start = Instant::now();
                let loaded = nodes(&*store)
                    .load(CHAT, "main", None)
                    .expect("the chat loads");
                timed += start.elapsed();
                drop(black_box(loaded));
            }
            timed
        })
    });
    group.bench_function("build-after-open", |b| {
        b.iter_custom(|iterations| {
            let mut timed = Duration::ZERO;
            for _ in 0..iterations {
                let mut engine =
                    ContextEngine::open(fixture.store(), CHAT, builder()).expect("chat opens");
                let start = Instant::now();
                let result = engine.build().expect("builds");
                timed += start.elapsed();
                drop(black_box((engine, result)));
            }
            timed
        })
    });
    let text = std::fs::read_to_string(&fixture.json).expect("the export is there");
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.bench_function("json-parse", |b| {
        b.iter_custom(|iterations| {
            let mut timed = Duration::ZERO;
            for _ in 0..iterations {
                let start = Instant::now();
                let state = MemoryState::from_json_str(&text).expect("the export parses");
                timed += start.elapsed();
                drop(black_box(state));
            }
            timed
        })
    });
    let state = MemoryState::from_json_str(&text).expect("the export parses");
    group.bench_function("cold-build", |b| {
        b.iter_custom(|iterations| {
            let mut timed = Duration::ZERO;
            for _ in 0..iterations {
                let start = Instant::now();
                let result = builder().build(&state).expect("builds");
                timed += start.elapsed();
                drop(black_box(result));
            }
            timed
        })
    });
    group.finish();
    if opens.is_empty() {
        return;
    }
    let open = median(&opens);
    println!(
        "engine open of {} bytes of chunk JSON: median {open:?} over {} runs, {:.1} MB/s",
        fixture.chunk_bytes,
        opens.len(),
        fixture.chunk_bytes as f64 / open.as_secs_f64() / 1e6,
    );
}

fn store_benches(c: &mut Criterion) {
    let fixture = Fixture::new();
    append(c, &fixture);
    fresh_process(c, &fixture);
    in_process(c, &fixture);
    load(c, &fixture);
}

criterion_group!(benches, store_benches);
criterion_main!(benches);
