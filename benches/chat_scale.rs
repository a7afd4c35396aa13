//! What a chat verb costs as the chat grows: each verb of the command line,
//! run as a fresh process (as a runtime calls it), on a chat of 1,000 small
//! chunks and on one of 1,000,000 (or `AGENT_CONTEXT_SCALE_CHUNKS`), side
//! by side in one run.
//!
//! `cargo bench --features bench --bench chat_scale`. Both chats are written once per run
//! by `chat append` of generated JSON Lines (a user message, a tool call,
//! its result and a reply per turn; about 10 tokens each), so their counts
//! and tallies are stored as a runtime's would be. Besides criterion's
//! estimates it prints the ratio of the medians of each verb (large over
//! small), and the peak resident memory of appending one chunk to each
//! chat when `/usr/bin/time` is there.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};

const BIN: &str = env!("CARGO_BIN_EXE_agent-context");
const SMALL: usize = 1_000;

/// Generated turns as JSON Lines, `chunks` chunks in all, ids prefixed by
/// `prefix`.
fn write_chunks(path: &Path, chunks: usize, prefix: &str) {
    let file = std::fs::File::create(path).expect("the target directory is writable");
    let mut out = std::io::BufWriter::new(file);
    for i in 0..chunks {
        let line = match i % 4 {
            0 => format!(
                r#"{{"id":"{prefix}u{i}","kind":"agent","role":"user","text":"Step {i}: check file {i}.rs"}}"#
            ),
            1 => format!(
                r#"{{"id":"{prefix}c{i}","kind":"workflow","call_id":"{prefix}k{i}","tool":"read_file","data":{{"path":"src/{i}.rs"}}}}"#
            ),
            2 => format!(
                r#"{{"id":"{prefix}r{i}","kind":"environment","call_id":"{prefix}k{}","text":"fn f{i}() {{ {i} }}"}}"#,
                i - 1
            ),
            _ => format!(
                r#"{{"id":"{prefix}a{i}","kind":"agent","role":"assistant","text":"File {i} looks fine."}}"#
            ),
        };
        writeln!(out, "{line}").expect("the chunks are written");
    }
}

fn run(args: &[&str]) -> Duration {
    let start = Instant::now();
    let status = Command::new(BIN)
        .args(args)
        .stdout(Stdio::null())
        .status()
        .expect("agent-context runs");
    assert!(status.success(), "agent-context {args:?} failed");
    start.elapsed()
}

/// A chat of `chunks` chunks in a fresh store.
fn chat(dir: &Path, chunks: usize) -> PathBuf {
    let db = dir.join(format!("chat-{chunks}.db"));
    let lines = dir.join(format!("chat-{chunks}.jsonl"));
    write_chunks(&lines, chunks, "");
    let took = run(&[
        "chat",
        "append",
        path(&lines),
        "--db",
        path(&db),
        "--chat",
        "c",
    ]);
    eprintln!("chat of {chunks} chunks written in {took:.1?}");
    run(&[
        "chat",
        "checkpoint",
        "start",
        "--db",
        path(&db),
        "--chat",
        "c",
    ]);
    db
}

fn path(path: &Path) -> &str {
    path.to_str()
        .expect("the target directory has a UTF-8 path")
}

/// The verbs, each as the arguments of one run on `db`; `n` makes names new.
fn verbs(db: &str, turn: &str, n: usize) -> Vec<(&'static str, Vec<String>)> {
    let chat = ["--db", db, "--chat", "c"].map(str::to_owned);
    let with = |args: &[&str]| {
        let mut all: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        all.extend(chat.iter().cloned());
        all
    };
    vec![
        (
            "append",
            with(&["chat", "append", turn, "--branch", "main"]),
        ),
        ("build", with(&["chat", "build", "--max-tokens", "128000"])),
        ("checkpoint", with(&["chat", "checkpoint", "cp", "--force"])),
        (
            "fork",
            with(&["chat", "fork", "--name", &format!("fork-{n}")]),
        ),
        (
            "rewind",
            with(&[
                "chat",
                "rewind",
                "--to",
                "u0",
                "--branch",
                "main",
                "--name",
                &format!("rw-{n}"),
            ]),
        ),
        ("switch", with(&["chat", "switch", "main"])),
        (
            "restore",
            with(&["chat", "restore", "start", "--name", &format!("rs-{n}")]),
        ),
        ("switch-back", with(&["chat", "switch", "main"])),
    ]
}

fn scale(c: &mut Criterion) {
    let large: usize = std::env::var("AGENT_CONTEXT_SCALE_CHUNKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("chat-scale-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("the target directory is writable");
    let dbs = [(SMALL, chat(&dir, SMALL)), (large, chat(&dir, large))];
    let mut medians: Vec<(String, usize, Duration)> = Vec::new();
    let mut group = c.benchmark_group("chat-scale");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(3));
    for (chunks, db) in &dbs {
        let db = path(db).to_owned();
        for (index, (verb, _)) in verbs("", "", 0).into_iter().enumerate() {
            let mut times = Vec::new();
            let mut n = 0;
            group.bench_function(format!("{verb}/{chunks}"), |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        n += 1;
                        let turn = dir.join(format!("turn-{chunks}-{n}.jsonl"));
                        write_chunks(&turn, 4, &format!("t{n}-"));
                        let all = verbs(&db, path(&turn), n);
                        let args: Vec<&str> = all[index].1.iter().map(String::as_str).collect();
                        let took = run(&args);
                        times.push(took);
                        total += took;
                    }
                    total
                })
            });
            times.sort();
            medians.push((verb.to_owned(), *chunks, times[times.len() / 2]));
        }
    }
    group.finish();
    for (verb, chunks, small) in medians.iter().filter(|m| m.1 == SMALL) {
        if let Some((_, _, big)) = medians.iter().find(|m| &m.0 == verb && m.1 != *chunks) {
            let ratio = big.as_secs_f64() / small.as_secs_f64();
            eprintln!("{verb}: {small:.1?} on {SMALL} chunks, {big:.1?} on {large}: {ratio:.2}x");
        }
    }
    peak_memory(&dir, &dbs);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The peak resident memory of appending one chunk, if `/usr/bin/time`
/// can say.
fn peak_memory(dir: &Path, dbs: &[(usize, PathBuf)]) {
    for (chunks, db) in dbs {
        let one = dir.join(format!("one-{chunks}.jsonl"));
        write_chunks(&one, 1, "peak-");
        let output = Command::new("/usr/bin/time")
            .args(["-f", "%M", BIN, "chat", "append", path(&one)])
            .args(["--db", path(db), "--chat", "c", "--branch", "main"])
            .stdout(Stdio::null())
            .output();
        let Ok(output) = output else {
            eprintln!("no /usr/bin/time: peak memory not measured");
            return;
        };
        let text = String::from_utf8_lossy(&output.stderr);
        let kb = text.lines().last().unwrap_or("?");
        eprintln!("appending one chunk to {chunks} chunks: peak {kb} KB resident");
    }
}

criterion_group!(benches, scale);
criterion_main!(benches);
