//! Counting a file in a whole process, ours and the peers': the marginal
//! throughput and the peak memory.
//!
//! `cargo bench --features bench --bench count_files`. Each corpus of the
//! `peers` bench (`examples/support/corpora.rs`: generated session text,
//! minified JSON, this crate's Rust sources, real files of this machine) is
//! written to files of 2 MB and 6 MB, and every sample is a new process
//! counting one of them with `o200k_base`. Ours is the CLI, `agent-context
//! count FILE`, on its default threads (the machine's, at most 4) and with
//! `--threads 1`; each peer is this bench started again with `COUNT_CHILD`
//! naming it, which reads the file and counts it in one call, with mimalloc
//! as its allocator, as the CLI has. Every counter must give the same count
//! before anything is timed.
//!
//! Criterion times the real files. Then every counter runs on every file
//! in interleaved rounds (`COUNT_FILES_ROUNDS`, default 15), and a table
//! gives each counter's median whole process at 2 MB and 6 MB, the marginal throughput (4 MB over the
//! difference of the two medians, so start-up and table loading cancel
//! out), its ratio to ours, and the median peak resident memory at 6 MB
//! (`ru_maxrss` of the process).

#[path = "../examples/support/corpora.rs"]
mod corpora;
#[path = "../examples/support/session_gen.rs"]
mod session_gen;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Set in a child to the name of the peer that counts `COUNT_FILE`.
const CHILD: &str = "COUNT_CHILD";
const FILE: &str = "COUNT_FILE";
const SIZES: [usize; 2] = [2_000_000, 6_000_000];
const OURS: &str = "agent-context";
const COUNTERS: [&str; 5] = [
    OURS,
    "agent-context --threads 1",
    "tiktoken",
    "bpe-openai",
    "tiktoken-rs",
];

/// In a child: counts the file with `peer` and prints the count.
fn child_count(peer: &str, path: &str) {
    let text = std::fs::read_to_string(path).expect("the corpus file is UTF-8");
    let tokens = match peer {
        "tiktoken" => tiktoken::get_encoding("o200k_base")
            .expect("o200k_base is built in")
            .count(&text),
        "bpe-openai" => bpe_openai::o200k_base().count(&text),
        "tiktoken-rs" => tiktoken_rs::o200k_base()
            .expect("o200k_base loads")
            .encode_ordinary(&text)
            .len(),
        other => panic!("unknown peer {other}"),
    };
    println!("{tokens}");
}

/// The process that counts `file` with `counter`.
fn command(counter: &str, file: &Path) -> Command {
    let mut command = if counter.starts_with(OURS) {
        let mut cli = Command::new(env!("CARGO_BIN_EXE_agent-context"));
        cli.arg("count").args(counter.split(' ').skip(1)).arg(file);
        cli
    } else {
        let mut child = Command::new(std::env::current_exe().expect("the bench knows its path"));
        child.env(CHILD, counter).env(FILE, file);
        child
    };
    command.stdout(Stdio::piped()).stderr(Stdio::inherit());
    command
}

/// One run: the count printed, the wall time from start to exit, and the
/// process's peak resident memory in KiB.
#[allow(
    clippy::zombie_processes,
    reason = "reaped by `wait4`, which reports the peak"
)]
fn run(counter: &str, file: &Path) -> (usize, Duration, u64) {
    use std::io::Read;
    let start = Instant::now();
    let mut process = command(counter, file).spawn().expect("the counter starts");
    let mut out = String::new();
    process
        .stdout
        .take()
        .expect("stdout is piped")
        .read_to_string(&mut out)
        .expect("the count is text");
    let pid = libc::pid_t::try_from(process.id()).expect("a pid fits");
    let mut status = 0;
    // SAFETY: an all-zero `rusage` is valid; `wait4` fills it for the pid
    // this bench started and has not waited for.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let elapsed = start.elapsed();
    assert!(waited == pid && libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    let tokens = out
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("{counter} printed {out:?}"));
    (tokens, elapsed, u64::try_from(usage.ru_maxrss).unwrap_or(0))
}

/// Each sample's time and peak, by corpus, size and counter.
type Samples = BTreeMap<(String, usize, &'static str), Vec<(Duration, u64)>>;

fn corpus_files(dir: &Path) -> Vec<(&'static str, usize, PathBuf)> {
    let mut files = Vec::new();
    for size in SIZES {
        let texts = [
            ("mixed", corpora::mixed(size)),
            ("minified-json", corpora::minified_json(size)),
            ("rust-source", corpora::rust_source(size)),
            ("real-files", corpora::real_files(size)),
        ];
        for (corpus, text) in texts {
            let path = dir.join(format!("{corpus}-{size}.txt"));
            std::fs::write(&path, text).expect("the corpus is written");
            files.push((corpus, size, path));
        }
    }
    files
}

/// Every counter gives the same count of every file.
fn check_counts(files: &[(&'static str, usize, PathBuf)]) {
    for (corpus, size, path) in files {
        let counts: Vec<usize> = COUNTERS
            .iter()
            .map(|counter| run(counter, path).0)
            .collect();
        println!("{corpus} {size} bytes: counts {counts:?}");
        assert!(
            counts.iter().all(|&n| n == counts[0]),
            "{corpus}: counters disagree"
        );
    }
}

/// Criterion's samples of the real files, each a whole process.
fn bench(c: &mut Criterion, files: &[(&'static str, usize, PathBuf)]) {
    let mut group = c.benchmark_group("count-files");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_millis(100))
        .measurement_time(Duration::from_secs(2));
    for (corpus, size, path) in files.iter().filter(|file| file.0 == "real-files") {
        for counter in COUNTERS {
            let id = format!("{corpus}-{}MB/{counter}", size / 1_000_000);
            group.bench_function(id, |b| {
                b.iter_custom(|iters| (0..iters).map(|_| run(counter, path).1).sum())
            });
        }
    }
    group.finish();
}

/// `rounds` runs of every counter on every file, interleaved so that the
/// machine's slow moments fall on all of them alike.
fn interleaved(files: &[(&'static str, usize, PathBuf)], rounds: usize) -> Samples {
    let mut samples = Samples::new();
    for _ in 0..rounds {
        for (corpus, size, path) in files {
            for counter in COUNTERS {
                let (_, elapsed, peak) = run(counter, path);
                samples
                    .entry((corpus.to_string(), *size, counter))
                    .or_default()
                    .push((elapsed, peak));
            }
        }
    }
    samples
}

fn median<T: Ord + Copy>(mut values: Vec<T>) -> T {
    values.sort_unstable();
    values[values.len() / 2]
}

/// A counter's median time and peak on one file, if it was measured.
fn medians(samples: &Samples, corpus: &str, size: usize, counter: &str) -> Option<(Duration, u64)> {
    let (_, runs) = samples
        .iter()
        .find(|((c, s, n), _)| c == corpus && *s == size && *n == counter)?;
    let time = median(runs.iter().map(|run| run.0).collect());
    let peak = median(runs.iter().map(|run| run.1).collect());
    Some((time, peak))
}

/// The table of medians, marginal throughput, ratios and peaks, for the
/// corpora and counters measured at both sizes.
fn report(samples: &Samples) {
    println!(
        "\n| corpus | counter | 2 MB | 6 MB | marginal MB/s | our marginal time / theirs | peak at 6 MB |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|");
    let mut corpora: Vec<&String> = samples.keys().map(|key| &key.0).collect();
    corpora.dedup();
    for corpus in corpora {
        let measured = |counter| {
            let small = medians(samples, corpus, SIZES[0], counter)?;
            let large = medians(samples, corpus, SIZES[1], counter)?;
            Some((small.0, large.0, large.0.saturating_sub(small.0), large.1))
        };
        let ours = measured(OURS).map(|(_, _, margin, _)| margin);
        for counter in COUNTERS {
            let Some((small, large, margin, peak)) = measured(counter) else {
                continue;
            };
            let mb_per_s = (SIZES[1] - SIZES[0]) as f64 / 1e6 / margin.as_secs_f64();
            let ratio = ours.map_or("".to_owned(), |ours| {
                format!("{:.2}", ours.as_secs_f64() / margin.as_secs_f64())
            });
            println!(
                "| {corpus} | {counter} | {:.1} ms | {:.1} ms | {mb_per_s:.1} | {ratio} | {:.1} MB |",
                small.as_secs_f64() * 1e3,
                large.as_secs_f64() * 1e3,
                peak as f64 / 1024.0,
            );
        }
    }
}

/// Rounds of the interleaved table (`COUNT_FILES_ROUNDS`, default 15).
fn rounds() -> usize {
    std::env::var("COUNT_FILES_ROUNDS")
        .ok()
        .and_then(|rounds| rounds.parse().ok())
        .unwrap_or(15)
}

fn main() {
    if let (Ok(peer), Ok(file)) = (std::env::var(CHILD), std::env::var(FILE)) {
        child_count(&peer, &file);
        return;
    }
    let dir =
        std::env::temp_dir().join(format!("agent-context-count-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let files = corpus_files(&dir);
    check_counts(&files);
    let mut criterion = Criterion::default().configure_from_args();
    bench(&mut criterion, &files);
    criterion.final_summary();
    report(&interleaved(&files, rounds()));
    let _ = std::fs::remove_dir_all(&dir);
}
