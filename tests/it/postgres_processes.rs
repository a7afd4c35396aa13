//! The PostgreSQL store across processes: writers appending at once lose
//! nothing, and a writer killed at any moment (inside its transaction,
//! while another waits on its lock, or at random) leaves whole saves only,
//! no orphan node and no lock, and the next writer carries on.
//!
//! Every process here is the real `agent-context` binary running `chat
//! append` or `chat export` against a schema of the test server
//! (`AGENT_CONTEXT_TEST_POSTGRES`). The deterministic kills hold a
//! writer inside its transaction by locking the branch row it must update
//! last, and find it waiting there in `pg_stat_activity` by the
//! `application_name` its URL gives it.

use std::fs::File;
use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use crate::common::batches::{
    BATCH, Rng, assert_round, assert_success, assert_writers_interleaved, batch_lines, batch_of,
    body, crash_seed, describe, whole_batch_prefix,
};
use crate::common::postgres::Schema;
use crate::common::temp::TempDir;
use agent_context::store::PostgresStore;
use postgres::Client;
use serde_json::Value;

const CHAT: &str = "c";
const SIGKILL: i32 = 9;
/// How long any one process may run before the test gives up on it.
const PROCESS_LIMIT: Duration = Duration::from_secs(60);
/// How long the server may take to notice a killed client.
const BACKEND_LIMIT: Duration = Duration::from_secs(10);

/// A name for the backends of this test process's writers, unique on the
/// server (other test processes may share it).
fn app_name(tag: &str) -> String {
    format!("ac_{tag}_{}", std::process::id())
}

/// `url` with the driver's `application_name`.
fn named(url: &str, app: &str) -> String {
    format!("{url}&application_name={app}")
}

fn agent_context(args: &[&str], url: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agent-context"));
    command
        .arg("chat")
        .args(args)
        .args(["--chat", CHAT, "--db", url])
        .stdin(Stdio::null());
    command
}

/// `chat append` of batch `batch` (written to a file in `dir`), started.
fn spawn_append(url: &str, dir: &Path, batch: usize, text_len: usize) -> Running {
    let input = dir.join(format!("batch-{batch}.jsonl"));
    std::fs::write(&input, batch_lines(batch, text_len)).unwrap();
    let child = agent_context(&["append"], url)
        .arg(&input)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn agent-context");
    Running(child)
}

/// A child process, killed and reaped on drop (when a test fails midway).
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Running {
    /// Waits up to `limit` for the process to end, killing it and failing
    /// the test if it does not.
    fn finish(&mut self, limit: Duration, what: &str) -> Output {
        let status = wait_exit(&mut self.0, limit, what);
        let mut stderr = Vec::new();
        if let Some(mut pipe) = self.0.stderr.take() {
            pipe.read_to_end(&mut stderr).unwrap();
        }
        Output {
            status,
            stdout: Vec::new(),
            stderr,
        }
    }

    /// Kills the process with SIGKILL and checks that the signal ended it.
    fn kill(&mut self, what: &str) {
        self.0.kill().unwrap();
        let output = self.finish(PROCESS_LIMIT, what);
        assert_eq!(
            output.status.signal(),
            Some(SIGKILL),
            "{what}: ended by itself ({}) before the kill: {}",
            describe(output.status),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

fn wait_exit(child: &mut Child, limit: Duration, what: &str) -> ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {limit:?}; killed");
        }
        thread::sleep(Duration::from_millis(2));
    }
}

/// Runs `command` to its end (at most [`PROCESS_LIMIT`]), its output in
/// files of `dir`: a pipe would fill up with a large export.
fn run(mut command: Command, dir: &Path, what: &str) -> Output {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let (out, err) = (dir.join(format!("{n}.out")), dir.join(format!("{n}.err")));
    let mut child = command
        .stdout(File::create(&out).unwrap())
        .stderr(File::create(&err).unwrap())
        .spawn()
        .expect("spawn agent-context");
    let status = wait_exit(&mut child, PROCESS_LIMIT, what);
    let output = Output {
        status,
        stdout: std::fs::read(&out).unwrap(),
        stderr: std::fs::read(&err).unwrap(),
    };
    let _ = (std::fs::remove_file(&out), std::fs::remove_file(&err));
    output
}

/// `chat append` of batch `batch`, which must succeed.
fn append(url: &str, dir: &Path, batch: usize, text_len: usize) {
    let input = dir.join(format!("append-{batch}.jsonl"));
    std::fs::write(&input, batch_lines(batch, text_len)).unwrap();
    let mut command = agent_context(&["append"], url);
    command.arg(&input);
    let what = format!("append of batch {batch}");
    assert_success(&run(command, dir, &what), &what);
    let _ = std::fs::remove_file(&input);
}

/// The chunk ids of `chat export` (a fresh process), each chunk checked to
/// carry its own text, `text_len(batch)` bytes long.
fn export(url: &str, dir: &Path, text_len: impl Fn(usize) -> usize) -> Vec<String> {
    let output = run(agent_context(&["export"], url), dir, "chat export");
    assert_success(&output, "chat export");
    let session: Value = serde_json::from_slice(&output.stdout).expect("export is JSON");
    let chunks = session["chunks"].as_array().expect("export has chunks");
    chunks
        .iter()
        .map(|chunk| {
            let id = chunk["id"].as_str().expect("chunk id").to_owned();
            let batch = batch_of(&id).unwrap_or_else(|| panic!("{id:?} is no batch's"));
            let text = chunk["text"].as_str().unwrap_or_default();
            let len = text_len(batch);
            assert!(
                text.len() == len && text == body(&id, len),
                "{id}: a text of {} bytes that is not its own ({len} expected)",
                text.len()
            );
            id
        })
        .collect()
}

/// One number from `sql`.
fn count(client: &mut Client, sql: &str, params: &[&(dyn postgres::types::ToSql + Sync)]) -> i64 {
    client.query_one(sql, params).unwrap().get(0)
}

/// Every node in the store's schema (`client`'s search path), committed.
fn nodes(client: &mut Client) -> i64 {
    count(client, "SELECT count(*) FROM nodes", &[])
}

/// Polls `poll` until it gives a value, failing the test after `limit`.
fn wait_for<T>(what: &str, limit: Duration, mut poll: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(value) = poll() {
            return value;
        }
        assert!(start.elapsed() < limit, "{what}: not after {limit:?}");
        thread::sleep(Duration::from_millis(5));
    }
}

/// Waits until the backend of `writer` (named `app`) waits on a lock
/// inside its transaction; returns its pid and statement. Fails if the
/// writer exits first.
fn wait_for_lock_wait(admin: &mut Client, app: &str, writer: &mut Running) -> (i32, String) {
    wait_for(&format!("{app} waiting on a lock"), PROCESS_LIMIT, || {
        if writer.0.try_wait().unwrap().is_some() {
            let output = writer.finish(PROCESS_LIMIT, app);
            panic!(
                "{app} ended ({}) before it waited on a lock: {}",
                describe(output.status),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        let row = admin
            .query_opt(
                "SELECT pid, query FROM pg_stat_activity WHERE application_name = $1 \
                 AND wait_event_type = 'Lock' AND xact_start IS NOT NULL",
                &[&app],
            )
            .unwrap()?;
        Some((row.get(0), row.get(1)))
    })
}

/// Waits until the server has ended every backend named `app` (it rolls
/// back what their transactions left when it notices the client gone).
fn wait_gone(admin: &mut Client, app: &str) {
    wait_for(
        &format!("the server ending {app}'s backends"),
        BACKEND_LIMIT,
        || {
            let sql = "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1";
            (count(admin, sql, &[&app]) == 0).then_some(())
        },
    );
}

/// Asserts the killed backend `pid` (named `app`) holds no lock.
fn assert_no_locks(admin: &mut Client, app: &str, pid: i32) {
    let by_name = "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid) \
                   WHERE a.application_name = $1";
    assert_eq!(count(admin, by_name, &[&app]), 0, "locks held by {app}");
    let by_pid = "SELECT count(*) FROM pg_locks WHERE pid = $1";
    assert_eq!(
        count(admin, by_pid, &[&pid]),
        0,
        "locks held by {app}'s pid {pid}"
    );
}

/// Locks the branch row in `client`'s transaction, as a writer's last
/// step before its commit would (`UPDATE branches`): a writer in the
/// middle of its save then waits there, inside its transaction.
fn lock_branch(client: &mut Client) -> postgres::Transaction<'_> {
    let mut tx = client.transaction().unwrap();
    let rows = tx
        .query(
            "SELECT head FROM branches WHERE chat = $1 AND name = $2 FOR UPDATE",
            &[&b"c".as_slice(), &b"main".as_slice()],
        )
        .unwrap();
    assert_eq!(rows.len(), 1, "the branch row to lock");
    tx
}

/// Four threads run 25 `chat append` processes each, one after another,
/// all on one chat and started together: every batch is stored exactly
/// once and whole, each writer's in the order it wrote them, and retried
/// saves leave no node behind. The store exists before they start; the
/// chat does not (the first appends create it at once). The branch
/// switches writer at nearly every batch (94-98 times in 100 on 2 cores),
/// each switch a save that raced others: 100 appends, as many as the
/// SQLite writers make, where 200 doubled the test's time (19 s alone)
/// for no new kind of race.
#[test]
fn four_writers_appending_at_once_lose_nothing() {
    const WRITERS: usize = 4;
    const PER_WRITER: usize = 25;
    const TEXT_LEN: usize = 256;
    let schema = Schema::new("writers");
    let dir = Arc::new(TempDir::new("pg-writers"));
    drop(PostgresStore::open(schema.url()).unwrap());
    let url = Arc::new(schema.url().to_owned());
    let barrier = Arc::new(Barrier::new(WRITERS));
    let started = Instant::now();
    let writers: Vec<_> = (0..WRITERS)
        .map(|writer| {
            let (dir, url, barrier) = (Arc::clone(&dir), Arc::clone(&url), Arc::clone(&barrier));
            thread::spawn(move || {
                barrier.wait();
                for batch in writer * PER_WRITER..(writer + 1) * PER_WRITER {
                    append(&url, dir.path(), batch, TEXT_LEN);
                }
            })
        })
        .collect();
    // All joined before a failure is reported: a writer still running
    // would use the schema past its drop.
    let failed = writers.into_iter().filter_map(|w| w.join().err()).count();
    assert_eq!(failed, 0, "writers failed (their messages are above)");
    let elapsed = started.elapsed();

    let ids = export(&url, dir.path(), |_| TEXT_LEN);
    let switches = assert_writers_interleaved(&ids, WRITERS, PER_WRITER);
    let mut client = schema.client();
    let stored = i64::try_from(ids.len()).unwrap();
    assert_eq!(nodes(&mut client), stored, "nodes in the store (orphans?)");
    eprintln!(
        "four writers: {} appends in {elapsed:.1?}; the branch switches writer {switches} times",
        WRITERS * PER_WRITER
    );
}

/// A writer killed inside its transaction, its nodes inserted and its
/// branch update waiting on a lock the test holds: nothing of its save is
/// ever visible, the server ends its backend and releases its locks, and
/// the next writer appends after the batches stored before.
#[test]
fn a_writer_killed_inside_its_transaction_leaves_nothing_and_the_next_continues() {
    const SMALL: usize = 1024;
    const LARGE: usize = 512 * 1024;
    const KILLED: usize = 900;
    let text_len = |batch| if batch >= KILLED { LARGE } else { SMALL };
    let schema = Schema::new("kill");
    let dir = TempDir::new("pg-kill");
    let url = schema.url();
    for batch in 0..3 {
        append(url, dir.path(), batch, SMALL);
    }
    let committed = 3 * BATCH as i64;
    let app = app_name("killme");
    // The second client: watches the writer, in the store's schema.
    let mut admin = schema.client();
    let mut locker = schema.client();
    let tx = lock_branch(&mut locker);
    let mut writer = spawn_append(&named(url, &app), dir.path(), KILLED, LARGE);
    let (pid, statement) = wait_for_lock_wait(&mut admin, &app, &mut writer);
    assert!(
        statement.starts_with("UPDATE branches"),
        "the writer waits on {statement:?}, not on its branch update"
    );
    let inserted = "SELECT count(*) FROM pg_locks WHERE pid = $1 AND granted \
                    AND relation = 'nodes'::regclass AND mode = 'RowExclusiveLock'";
    assert_eq!(
        count(&mut admin, inserted, &[&pid]),
        1,
        "the writer inserted nodes"
    );
    assert_eq!(
        nodes(&mut admin),
        committed,
        "uncommitted nodes are visible"
    );

    writer.kill("the writer inside its transaction");
    tx.rollback().unwrap();
    wait_gone(&mut admin, &app);
    assert_no_locks(&mut admin, &app, pid);
    let ids = export(url, dir.path(), text_len);
    assert_eq!(whole_batch_prefix(&ids), Ok(3), "{ids:?}");
    assert_eq!(
        nodes(&mut admin),
        committed,
        "nodes left by the killed writer"
    );

    // The failover writer.
    append(url, dir.path(), 3, SMALL);
    let ids = export(url, dir.path(), text_len);
    assert_eq!(whole_batch_prefix(&ids), Ok(4), "{ids:?}");
    assert_eq!(nodes(&mut admin), committed + BATCH as i64);
}

/// Writer A killed inside its transaction while it holds the chat's row
/// lock and writer B waits on that lock: the server releases A's locks
/// when it ends A's backend, B saves its batch whole, and A's is absent.
#[test]
fn a_writer_killed_holding_the_chat_lock_lets_the_waiting_writer_finish() {
    const SMALL: usize = 1024;
    const LARGE: usize = 512 * 1024;
    const KILLED: usize = 900;
    let text_len = |batch| if batch >= KILLED { LARGE } else { SMALL };
    let schema = Schema::new("killwait");
    let dir = TempDir::new("pg-killwait");
    let url = schema.url();
    for batch in 0..2 {
        append(url, dir.path(), batch, SMALL);
    }
    let (app_a, app_b) = (app_name("a"), app_name("b"));
    let mut admin = schema.client();
    let mut locker = schema.client();
    let tx = lock_branch(&mut locker);
    let mut a = spawn_append(&named(url, &app_a), dir.path(), KILLED, LARGE);
    let (pid_a, statement) = wait_for_lock_wait(&mut admin, &app_a, &mut a);
    assert!(
        statement.starts_with("UPDATE branches"),
        "A waits on {statement:?}"
    );
    let mut b = spawn_append(&named(url, &app_b), dir.path(), 2, SMALL);
    let (pid_b, statement) = wait_for_lock_wait(&mut admin, &app_b, &mut b);
    assert!(
        statement.contains("FROM chats") && statement.contains("FOR UPDATE"),
        "B waits on {statement:?}, not on the chat's row"
    );
    let blockers: Vec<i32> = admin
        .query_one("SELECT pg_blocking_pids($1)", &[&pid_b])
        .unwrap()
        .get(0);
    assert_eq!(blockers, [pid_a], "B waits on A");

    a.kill("writer A");
    tx.rollback().unwrap();
    let output = b.finish(PROCESS_LIMIT, "writer B");
    assert_success(&output, "writer B, after A was killed");
    wait_gone(&mut admin, &app_a);
    assert_no_locks(&mut admin, &app_a, pid_a);
    let ids = export(url, dir.path(), text_len);
    assert_eq!(whole_batch_prefix(&ids), Ok(3), "{ids:?}");
    assert_eq!(nodes(&mut admin), 3 * BATCH as i64, "nodes left by A");
}

/// How the crash test's rounds ended.
#[derive(Debug, Default)]
struct Tally {
    kills: usize,
    exited: usize,
    committed_by_killed: usize,
    /// Rounds where the test saw the writer's transaction begin writing.
    saw_write: usize,
    /// Killed after drawing its node ids (the sequence moved) and before
    /// its commit: inside its transaction.
    killed_mid_save: usize,
}

/// The last node id drawn from the nodes' sequence (which no rollback
/// undoes), 0 before the first.
fn drawn(client: &mut Client) -> i64 {
    let sql = "SELECT COALESCE(pg_sequence_last_value(\
               pg_get_serial_sequence('nodes', 'id')::regclass), 0)";
    count(client, sql, &[])
}

/// Waits until the backend named `app` has a transaction id (it has
/// begun writing: a save's first step locks the chat's row), or `writer`
/// exits, or `limit` passes; says whether it saw one.
fn wait_for_write(admin: &mut Client, app: &str, writer: &mut Running, limit: Duration) -> bool {
    let sql = "SELECT count(*) FROM pg_stat_activity \
               WHERE application_name = $1 AND backend_xid IS NOT NULL";
    let start = Instant::now();
    while start.elapsed() < limit && writer.0.try_wait().unwrap().is_none() {
        if count(admin, sql, &[&app]) > 0 {
            return true;
        }
    }
    false
}

/// Kills `chat append` writers with SIGKILL at pseudo-random moments: in
/// odd rounds after a random delay (0 to 1.3 times the last whole run, so
/// some finish and the rest die while starting, connecting, loading or
/// counting, now and then saving), in even rounds within a 1/40 of a run
/// after the writer's transaction began writing (in the middle of its save
/// or just after its commit). After each round, once the server has ended
/// the writer's backends, the branch is whole batches `0..k` in order, `k`
/// the batches stored before the round or one more, and the store holds
/// exactly their nodes. A run prints the tally (`--nocapture`); on 2 cores,
/// 4 seeds gave 13 to 18 kills of 20 rounds, 4 to 9 of them after the
/// writer drew its node ids and before its commit.
#[test]
fn writers_killed_at_random_moments_leave_whole_batches() {
    const ROUNDS: usize = 20;
    const TEXT_LEN: usize = 64 * 1024;
    let seed = crash_seed();
    let mut rng = Rng(seed);
    let schema = Schema::new("crash");
    let dir = TempDir::new("pg-crash");
    let app = app_name("crash");
    let url = named(schema.url(), &app);
    let mut admin = schema.client();
    let started = Instant::now();
    let mut tally = Tally::default();
    let mut batches = 0;
    // The last run that finished on its own: the scale of the delays.
    let mut run_time = Duration::ZERO;
    for round in 0..ROUNDS {
        let drawn_before = if round == 0 { 0 } else { drawn(&mut admin) };
        let spawned = Instant::now();
        let mut writer = spawn_append(&url, dir.path(), batches, TEXT_LEN);
        // The first round runs whole: it creates the store and times a run.
        if round > 0 {
            let delay = if round % 2 == 1 {
                rng.duration(run_time * 13 / 10)
            } else {
                // Into the save: from when the writer's transaction has
                // an id (its chat row lock), within a 1/40 of a run.
                if wait_for_write(&mut admin, &app, &mut writer, run_time * 3) {
                    tally.saw_write += 1;
                }
                spawned.elapsed() + rng.duration(run_time / 40)
            };
            while spawned.elapsed() < delay && writer.0.try_wait().unwrap().is_none() {
                thread::sleep(Duration::from_micros(100));
            }
            let _ = writer.0.kill();
        }
        let output = writer.finish(PROCESS_LIMIT, &format!("round {round}"));
        let elapsed = spawned.elapsed();
        let killed = output.status.signal() == Some(SIGKILL);
        if killed {
            tally.kills += 1;
        } else {
            assert_success(&output, &format!("round {round}"));
            tally.exited += 1;
            run_time = elapsed;
        }
        // A commit the killed writer sent lands before its backend ends.
        wait_gone(&mut admin, &app);
        let ids = export(schema.url(), dir.path(), |_| TEXT_LEN);
        let stored = whole_batch_prefix(&ids)
            .unwrap_or_else(|e| panic!("round {round} (seed {seed:#x}): {e}"));
        tally.committed_by_killed += assert_round(round, seed, batches, stored, killed);
        if killed && stored == batches && drawn(&mut admin) > drawn_before {
            tally.killed_mid_save += 1;
        }
        batches = stored;
        let expected = i64::try_from(batches * BATCH).unwrap();
        assert_eq!(
            nodes(&mut admin),
            expected,
            "round {round}: nodes besides the branch's"
        );
    }
    assert!(
        tally.kills >= ROUNDS / 4,
        "too few kills to prove anything: {tally:?}"
    );

    // A writer after all that appends as usual.
    append(schema.url(), dir.path(), batches, TEXT_LEN);
    let ids = export(schema.url(), dir.path(), |_| TEXT_LEN);
    assert_eq!(whole_batch_prefix(&ids), Ok(batches + 1));
    assert_eq!(
        nodes(&mut admin),
        i64::try_from((batches + 1) * BATCH).unwrap()
    );
    eprintln!(
        "postgres crash test (seed {seed:#x}): {tally:?}, {} batches stored, {:.1?}",
        batches + 1,
        started.elapsed()
    );
}

/// The backends named `app`, by pid.
fn backend_pids(admin: &mut Client, app: &str) -> Vec<i32> {
    let sql = "SELECT pid FROM pg_stat_activity WHERE application_name = $1 ORDER BY pid";
    let rows = admin.query(sql, &[&app]).expect("pg_stat_activity reads");
    rows.iter().map(|row| row.get(0)).collect()
}

/// A store reads and writes on the connection it opened to check its
/// schema: a process that builds once connects once, and the server
/// starts no second backend for it.
#[test]
fn a_store_works_on_the_connection_it_opened() {
    use agent_context::store::Store;
    let schema = Schema::new("one_connection");
    let app = app_name("one_connection");
    let mut admin = schema.client();
    let store = PostgresStore::open(&named(schema.url(), &app)).expect("the store opens");
    let opened = backend_pids(&mut admin, &app);
    assert_eq!(opened.len(), 1, "open keeps its connection: {opened:?}");
    store.open_chat(CHAT).expect("a chat is created");
    assert_eq!(store.chats().expect("chats list").len(), 1);
    assert_eq!(backend_pids(&mut admin, &app), opened, "the same backend");
    drop(store);
    wait_gone(&mut admin, &app);
}
