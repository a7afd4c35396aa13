//! The SQLite store across processes: writers killed at random moments
//! leave a consistent store holding whole saves only, writers appending at
//! once lose nothing, and the files are private.
//!
//! Every process here is the real `agent-context` binary running
//! `chat append`, so a kill hits the process that holds the database open.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use crate::common::limits::MAIN_BRANCH;
use agent_context::store::{SqliteStore, Store};
use agent_context::{ContextBuilder, ContextEngine};
use rusqlite::{Connection, OpenFlags};
use serde_json::Value;

use crate::common::batches::{
    BATCH, Rng, assert_round, assert_success, assert_writers_interleaved, batch_lines, batch_order,
    body, chunk_id, crash_seed, whole_batch_prefix,
};
use crate::common::temp::TempDir;

const CHAT: &str = "c";

const SIGKILL: i32 = 9;

/// `path` with `suffix` appended: SQLite's `-wal` and `-shm` files.
fn sidecar(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

#[test]
fn the_batch_checks_catch_what_a_torn_store_would_show() {
    let ids = |batches: &[usize]| -> Vec<String> {
        batches
            .iter()
            .flat_map(|&b| (0..BATCH).map(move |i| chunk_id(b, i)))
            .collect()
    };
    assert_eq!(whole_batch_prefix(&[]), Ok(0));
    assert_eq!(whole_batch_prefix(&ids(&[0, 1, 2, 3])), Ok(4));
    // A missing middle batch, batches out of order, a batch twice.
    assert!(whole_batch_prefix(&ids(&[0, 1, 3])).is_err());
    assert!(whole_batch_prefix(&ids(&[0, 2, 1])).is_err());
    assert!(whole_batch_prefix(&ids(&[0, 1, 1])).is_err());
    assert!(whole_batch_prefix(&ids(&[1, 2])).is_err());
    // Part of a batch: its last chunk lost, or its chunks out of order.
    let mut partial = ids(&[0, 1]);
    partial.pop();
    assert!(whole_batch_prefix(&partial).is_err());
    let mut swapped = ids(&[0, 1]);
    swapped.swap(3, 4);
    assert!(whole_batch_prefix(&swapped).is_err());
    // Chunks of two batches interleaved, though every chunk is there.
    let mut interleaved = ids(&[0, 1]);
    interleaved.swap(2, 3);
    assert!(batch_order(&interleaved).is_err());
    assert_eq!(batch_order(&ids(&[5, 0, 7])), Ok(vec![5, 0, 7]));
}

/// Asserts `path`, if it exists, is readable and writable by its owner only.
fn assert_private(path: &Path) {
    if let Ok(metadata) = std::fs::metadata(path) {
        let mode = metadata.permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{} has mode {mode:o}", path.display());
    }
}

/// Asserts SQLite finds no corruption in the file: `integrity_check` says
/// `ok` and no row breaks a foreign key.
fn assert_integrity(db: &Path) {
    // Without SQLITE_OPEN_CREATE: a writer killed before it created the
    // file leaves nothing to check, and this must not create it.
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let connection = Connection::open_with_flags(db, flags).expect("open the database");
    let mut statement = connection.prepare("PRAGMA integrity_check").unwrap();
    let report: Vec<String> = statement
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert_eq!(report, ["ok"], "integrity_check of {}", db.display());
    let mut statement = connection.prepare("PRAGMA foreign_key_check").unwrap();
    let broken = statement.query_map([], |_| Ok(())).unwrap().count();
    assert_eq!(broken, 0, "rows breaking a foreign key in {}", db.display());
}

/// The ids of the chat's main branch as the store holds them (empty if the
/// chat was never created), each chunk checked to carry its own text.
fn stored_ids(db: &Path, text_len: usize) -> Vec<String> {
    let store = SqliteStore::open(db).expect("the store opens after a kill");
    if store.chat(CHAT).unwrap().is_none() {
        return Vec::new();
    }
    let mut engine = ContextEngine::open(Arc::new(store), CHAT, ContextBuilder::new())
        .expect("the chat opens after a kill");
    assert_eq!(engine.branch(), MAIN_BRANCH);
    let state = engine.state().expect("the chat reads after a kill");
    state
        .chunks
        .iter()
        .map(|stored| {
            let chunk = serde_json::to_value(stored).expect("a chunk is JSON");
            let id = chunk["id"].as_str().expect("chunk id").to_owned();
            assert_eq!(
                chunk["text"].as_str().map(str::len),
                Some(text_len),
                "text of {id}"
            );
            assert!(
                chunk["text"] == body(&id, text_len),
                "{id} has another text"
            );
            id
        })
        .collect()
}

/// `agent-context chat append --db DB --chat c FILE`, run through `sh` with
/// umask 0 (SQLite's own default would make the files 0644) and `exec`, so
/// the process id is the appender's once it runs.
fn append_command(db: &Path, input: &Path) -> Command {
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(r#"umask 000; exec "$0" "$@""#)
        .arg(env!("CARGO_BIN_EXE_agent-context"))
        .args(["chat", "append", "--chat", CHAT, "--db"])
        .arg(db)
        .arg(input)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    command
}

/// What a killed writer left in the write-ahead log, read from its frame
/// headers (SQLite's WAL format: a 32-byte header with two salts, then
/// frames of a 24-byte header and a page; a frame whose header has a
/// non-zero "database size" ends a transaction, and frames whose salts
/// differ from the header's are left from an earlier generation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WalTail {
    /// No log, or an empty one: the writer had not begun writing a save,
    /// or had finished and removed its log.
    Empty,
    /// A transaction's frames, or part of one, after the last commit: the
    /// kill landed in the middle of a save.
    Uncommitted,
    /// The log ends with a commit: the kill landed after a save committed,
    /// before the log was copied into the database and removed.
    Committed,
}

fn wal_tail(wal: &Path) -> WalTail {
    let Ok(log) = std::fs::read(wal) else {
        return WalTail::Empty;
    };
    let u32_at = |at: usize| u32::from_be_bytes(log[at..at + 4].try_into().unwrap());
    if log.len() < 32 {
        return WalTail::Empty;
    }
    let page = u32_at(8) as usize;
    let salts = &log[16..24];
    let (mut offset, mut commits, mut after_commit) = (32, 0, 0);
    while offset + 24 <= log.len() && &log[offset + 8..offset + 16] == salts {
        if offset + 24 + page > log.len() {
            after_commit += 1;
            break;
        }
        if u32_at(offset + 4) != 0 {
            commits += 1;
            after_commit = 0;
        } else {
            after_commit += 1;
        }
        offset += 24 + page;
    }
    // A header with no frame yet is written as a save's first step.
    if after_commit > 0 || commits == 0 {
        WalTail::Uncommitted
    } else {
        WalTail::Committed
    }
}

/// Waits until the writer's log grows past `from` bytes (it has begun
/// writing a save's frames) or it exits, checking every 100 µs.
fn wait_for_wal(child: &mut Child, wal: &Path, from: u64, limit: Duration) {
    let start = Instant::now();
    while start.elapsed() < limit && child.try_wait().unwrap().is_none() {
        if std::fs::metadata(wal).is_ok_and(|m| m.len() > from) {
            return;
        }
        thread::sleep(Duration::from_micros(100));
    }
}

/// Sleeps up to `delay`, returning early if the child exits.
fn wait_up_to(child: &mut Child, delay: Duration) {
    let deadline = Instant::now() + delay;
    while child.try_wait().unwrap().is_none() {
        let now = Instant::now();
        if now >= deadline {
            return;
        }
        thread::sleep((deadline - now).min(Duration::from_millis(1)));
    }
}

/// How the crash test's rounds ended.
#[derive(Debug, Default)]
struct Tally {
    kills: usize,
    exited: usize,
    committed_by_killed: usize,
    wal_empty: usize,
    wal_uncommitted: usize,
    wal_committed: usize,
}

/// Kills `chat append` writers with SIGKILL at pseudo-random moments, and
/// after every kill checks that the store opens, SQLite finds it intact,
/// and the branch is whole batches `0..k` in order, `k` the batches stored
/// before the round or one more; the next writer appends batch `k`.
///
/// Where the kills land: half the rounds kill after a random delay from
/// the start (0 to 1.3 times the last whole run, so some writers finish
/// and the rest die while starting, loading, counting or checkpointing);
/// the other half wait until the writer's log grows (its save has begun
/// writing) and kill within a random 1/40 of a run after that. After each
/// kill the write-ahead log is read before anything opens the store
/// ([`WalTail`]); frames with no commit after them mean the kill landed in
/// the middle of a save. A run prints the tally (`--nocapture`). On 2
/// cores and ext4, with 48 KiB chunks (a save writes about 40 pages),
/// five seeds gave 5 to 16 kills (of 24 to 30) in the middle of a save and
/// 3 to 8 after a commit, before the log was copied into the database; in
/// each one checked, the batch was absent, respectively present. The test
/// keeps killing past its minimum until it has seen 3 of each, within a
/// cap, but does not assert it: where a kill lands depends on the machine.
#[test]
fn a_writer_killed_at_any_moment_leaves_whole_batches() {
    const MIN_KILLS: usize = 24;
    const MAX_KILLS: usize = 60;
    const TEXT_LEN: usize = 48 * 1024;
    let seed = crash_seed();
    let mut rng = Rng(seed);
    let dir = TempDir::new("crash");
    let db = dir.join("chats.db");
    let wal = sidecar(&db, "-wal");
    let shm = sidecar(&db, "-shm");
    let started = Instant::now();
    let mut tally = Tally::default();
    let mut batches = 0;
    // The last run that finished on its own: the scale of the delays.
    let mut run_time = Duration::from_millis(100);
    for round in 0.. {
        let enough_mid_save = tally.wal_uncommitted >= 3 && tally.wal_committed >= 3;
        if tally.kills >= MAX_KILLS || (tally.kills >= MIN_KILLS && enough_mid_save) {
            break;
        }
        let input = dir.join(&format!("batch-{batches}.jsonl"));
        std::fs::write(&input, batch_lines(batches, TEXT_LEN)).unwrap();
        let wal_before = std::fs::metadata(&wal).map_or(0, |m| m.len());
        let spawned = Instant::now();
        let mut child = append_command(&db, &input).spawn().expect("spawn");
        // The first round runs whole: it creates the store and times a run.
        if round > 0 {
            if rng.below(2) == 0 {
                let delay = rng.duration(run_time * 13 / 10);
                wait_up_to(&mut child, delay);
            } else {
                wait_for_wal(&mut child, &wal, wal_before, run_time * 3);
                let delay = rng.duration(run_time / 40);
                wait_up_to(&mut child, delay);
            }
            child.kill().unwrap();
        }
        let output = child.wait_with_output().unwrap();
        let elapsed = spawned.elapsed();
        let killed = output.status.signal() == Some(SIGKILL);
        if killed {
            tally.kills += 1;
            match wal_tail(&wal) {
                WalTail::Empty => tally.wal_empty += 1,
                WalTail::Uncommitted => tally.wal_uncommitted += 1,
                WalTail::Committed => tally.wal_committed += 1,
            }
        } else {
            assert_success(&output, &format!("round {round}"));
            tally.exited += 1;
            run_time = elapsed;
        }

        for file in [&db, &wal, &shm] {
            assert_private(file);
        }
        if db.exists() {
            assert_integrity(&db);
        }
        let ids = stored_ids(&db, TEXT_LEN);
        let stored = whole_batch_prefix(&ids)
            .unwrap_or_else(|e| panic!("round {round} (seed {seed:#x}): {e}"));
        tally.committed_by_killed += assert_round(round, seed, batches, stored, killed);
        batches = stored;
        let _ = std::fs::remove_file(&input);
    }

    // A writer after all that appends as usual, and the export agrees.
    let input = dir.join("last.jsonl");
    std::fs::write(&input, batch_lines(batches, TEXT_LEN)).unwrap();
    let output = append_command(&db, &input).output().unwrap();
    assert_success(&output, "the append after the kills");
    let exported = export_ids(&db);
    assert_eq!(whole_batch_prefix(&exported), Ok(batches + 1));
    assert_integrity(&db);
    eprintln!(
        "crash test (seed {seed:#x}): {tally:?}, {} batches stored, {:.1?}",
        batches + 1,
        started.elapsed()
    );
}

/// The chunk ids of `chat export`.
fn export_ids(db: &Path) -> Vec<String> {
    let output = Command::new(env!("CARGO_BIN_EXE_agent-context"))
        .args(["chat", "export", "--chat", CHAT, "--db"])
        .arg(db)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_success(&output, "chat export");
    let session: Value = serde_json::from_slice(&output.stdout).expect("export is JSON");
    session["chunks"]
        .as_array()
        .expect("export has chunks")
        .iter()
        .map(|chunk| chunk["id"].as_str().expect("chunk id").to_owned())
        .collect()
}

/// Two processes append 50 batches each to one chat at once: every batch
/// is stored exactly once and whole, each writer's in the order it wrote
/// them. (`chat append` retries a save that lost the race; each retry
/// means the other writer stored a batch, so its 64 attempts cannot run
/// out.) The store exists before they start: two processes creating it at
/// once is the next test's.
#[test]
fn two_writers_appending_at_once_lose_nothing() {
    const PER_WRITER: usize = 50;
    const TEXT_LEN: usize = 256;
    let dir = Arc::new(TempDir::new("writers"));
    let db = dir.join("chats.db");
    drop(SqliteStore::open(&db).unwrap());
    let barrier = Arc::new(Barrier::new(2));
    let writers: Vec<_> = (0..2)
        .map(|writer| {
            let (dir, db, barrier) = (Arc::clone(&dir), db.clone(), Arc::clone(&barrier));
            thread::spawn(move || {
                let input = dir.join(&format!("writer-{writer}.jsonl"));
                barrier.wait();
                for batch in writer * PER_WRITER..(writer + 1) * PER_WRITER {
                    std::fs::write(&input, batch_lines(batch, TEXT_LEN)).unwrap();
                    let output = Command::new(env!("CARGO_BIN_EXE_agent-context"))
                        .args(["chat", "append", "--chat", CHAT, "--db"])
                        .arg(&db)
                        .arg(&input)
                        .stdin(Stdio::null())
                        .output()
                        .unwrap();
                    assert_success(&output, &format!("writer {writer}, batch {batch}"));
                }
            })
        })
        .collect();
    // Both joined before either's failure is reported: a writer still
    // running would keep the directory alive past the test.
    let failed = writers.into_iter().filter_map(|w| w.join().err()).count();
    assert_eq!(failed, 0, "writers failed (their messages are above)");

    assert_integrity(&db);
    let ids = export_ids(&db);
    let switches = assert_writers_interleaved(&ids, 2, PER_WRITER);
    eprintln!("two writers: the branch switches writer {switches} times");
}

/// Processes that start on a missing file at once all append. Each reads
/// its batch from standard input before it opens the store, so the test
/// releases them together by closing their inputs. Each round has a fresh
/// file; on 2 cores a process that lost the race failed at once with
/// "database is locked" in most rounds: such a fault passes 10 rounds
/// with a chance below one in a thousand.
#[test]
fn processes_creating_a_store_at_once_all_append() {
    const ROUNDS: usize = 10;
    const WRITERS: usize = 3;
    let dir = TempDir::new("create");
    for round in 0..ROUNDS {
        let db = dir.join(&format!("round-{round}.db"));
        let mut children: Vec<Child> = (0..WRITERS)
            .map(|_| {
                Command::new(env!("CARGO_BIN_EXE_agent-context"))
                    .args(["chat", "append", "--chat", CHAT, "--db"])
                    .arg(&db)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("spawn")
            })
            .collect();
        let inputs: Vec<_> = children
            .iter_mut()
            .enumerate()
            .map(|(batch, child)| {
                let mut input = child.stdin.take().unwrap();
                input.write_all(batch_lines(batch, 16).as_bytes()).unwrap();
                input
            })
            .collect();
        // Time to start and wait for the end of their input; were one not
        // waiting yet, it would only start later, and the round still holds.
        thread::sleep(Duration::from_millis(50));
        drop(inputs);
        for (batch, child) in children.into_iter().enumerate() {
            let output = child.wait_with_output().unwrap();
            assert_success(&output, &format!("round {round}, batch {batch}"));
        }
        let mut order = batch_order(&stored_ids(&db, 16)).unwrap_or_else(|e| panic!("{e}"));
        order.sort_unstable();
        assert_eq!(order, (0..WRITERS).collect::<Vec<_>>(), "round {round}");
    }
}

/// The store's file, log and shared memory are its owner's only (0600),
/// whoever creates them. (The crash test checks the files each killed
/// writer leaves, too.)
#[test]
fn a_store_and_its_log_are_private() {
    let dir = TempDir::new("private");
    // Opened by the library: the log and shared memory exist while a
    // connection that wrote is open.
    let db = dir.join("library.db");
    let store = SqliteStore::open(&db).unwrap();
    store.open_chat(CHAT).unwrap();
    let wal = sidecar(&db, "-wal");
    assert!(wal.exists(), "a store that wrote keeps its log while open");
    for file in [&db, &wal, &sidecar(&db, "-shm")] {
        assert_private(file);
    }
    drop(store);

    // Created by the CLI under umask 0: SQLite alone would make it 0644.
    let db = dir.join("cli.db");
    let input = dir.join("batch.jsonl");
    std::fs::write(&input, batch_lines(0, 16)).unwrap();
    let output = append_command(&db, &input).output().unwrap();
    assert_success(&output, "chat append");
    assert!(db.exists());
    for file in [&db, &sidecar(&db, "-wal"), &sidecar(&db, "-shm")] {
        assert_private(file);
    }
    // The same umask without the store's care: the check can fail.
    let plain = dir.join("plain");
    let output = Command::new("sh")
        .arg("-c")
        .arg(r#"umask 000; : > "$0""#)
        .arg(&plain)
        .output()
        .unwrap();
    assert!(output.status.success());
    let mode = std::fs::metadata(&plain).unwrap().permissions().mode() & 0o777;
    assert_ne!(mode, 0o600, "umask 0 gives a plain file wider access");
}

/// `chat build --db DB --chat c --max-tokens 12000`: its only write, once
/// the counts are stored, is the record of its build.
fn build_command(db: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agent-context"));
    command
        .args([
            "chat",
            "build",
            "--chat",
            CHAT,
            "--max-tokens",
            "12000",
            "--db",
        ])
        .arg(db)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

/// Appends `chunks` to the chat with `chat append`, as a session file.
fn append_chunks(db: &Path, dir: &TempDir, chunks: &[agent_context::MemoryChunk]) {
    let input = dir.join("append.json");
    let mut state = agent_context::MemoryState::new();
    state.chunks = chunks.to_vec();
    std::fs::write(&input, serde_json::to_string(&state).unwrap()).unwrap();
    assert_success(&append_command(db, &input).output().unwrap(), "append");
}

/// Kills `chat build` with SIGKILL, half the time as soon as it begins
/// writing the record of its build (its log grows), half after a random
/// delay; after each kill, the next build (in this process) opens the
/// store, fits its budget, keeps the protected chunks and every call with
/// its results, and finds the record whole: the last one written, or none.
#[test]
fn a_build_killed_while_it_keeps_its_record_leaves_the_next_build_valid() {
    use crate::common::{assert_protected_present, assert_units_whole, assert_within_budget};
    use crate::session_gen::{LoopShape, agent_loop};
    let dir = TempDir::new("build-kill");
    let db = dir.join("chats.db");
    let agent_loop = agent_loop(7, &LoopShape::new(160));
    let opening: Vec<_> = agent_loop.opening.chunks.clone();
    let first: Vec<_> = agent_loop.steps[..100].iter().flatten().cloned().collect();
    append_chunks(&db, &dir, &[opening, first].concat());
    assert_success(&build_command(&db).output().unwrap(), "the first build");
    let wal = sidecar(&db, "-wal");
    let mut rng = Rng(crash_seed());
    let mut builder = ContextBuilder::new();
    builder.max_tokens(12_000);
    let (mut mid_write, mut kills) = (0, 0);
    for (round, step) in agent_loop.steps[100..].iter().enumerate() {
        append_chunks(&db, &dir, step);
        let from = std::fs::metadata(&wal).map_or(0, |m| m.len());
        let mut child = build_command(&db).spawn().unwrap();
        if round % 2 == 0 {
            wait_for_wal(&mut child, &wal, from, Duration::from_secs(10));
        } else {
            wait_up_to(&mut child, rng.duration(Duration::from_millis(60)));
        }
        let _ = child.kill();
        let status = child.wait().unwrap();
        if status.signal() == Some(SIGKILL) {
            kills += 1;
            mid_write += usize::from(wal_tail(&wal) == WalTail::Uncommitted);
        }
        let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&db).unwrap());
        let mut engine = ContextEngine::open(store, CHAT, builder.clone()).unwrap();
        let result = engine.build().unwrap();
        assert_ne!(
            result.previous_build,
            Some(agent_context::PreviousBuild::Unreadable),
            "round {round}"
        );
        let state = engine.state().unwrap().clone();
        assert_within_budget(&result);
        assert_units_whole(&state, &result);
        assert_protected_present(&state, &result);
    }
    assert!(kills > 0, "no build was killed");
    eprintln!("{kills} builds killed, {mid_write} in the middle of a write");
}
