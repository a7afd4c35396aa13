//! A build on several threads is the build on one: the same prompt, report,
//! errors and session statistics, byte for byte.

// Only the CLI runner of `it`'s common module: the rest (strategies,
// fixtures) would be compiled again for nothing.
#[path = "it/common/cli.rs"]
mod cli;
#[path = "../examples/support/session_gen.rs"]
mod session_gen;

use std::collections::HashSet;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;

use cli::run;

use agent_context::render::{ChunkRenderer, RenderContext};
use agent_context::tokens::{Encoding, TiktokenCounter, TokenCounter};
use agent_context::{
    BuildResult, ChunkKind, ContextBuilder, ContextSession, MemoryChunk, MemoryState, Result, Role,
};

/// A generated session of about 330k tokens (1.3 MB rendered): more than
/// one batch of chunks rendered ahead.
fn long_session() -> MemoryState {
    session_gen::session(3, 300, 1)
}

/// The long session with, every 40 chunks, a system chunk, an orphan tool
/// result (its call is missing) and an assistant turn written as `content`.
fn varied_session() -> MemoryState {
    let mut json = serde_json::to_value(long_session()).unwrap();
    let chunks = json["chunks"].as_array_mut().unwrap();
    let log = "error[E0308]: mismatched types at src/lib.rs:12\n".repeat(60);
    for n in (0..chunks.len()).step_by(40).rev() {
        let extra = [
            serde_json::json!({"id": format!("sys-{n}"), "kind": "system",
                "text": format!("Standing note {n}: keep the API stable.")}),
            serde_json::json!({"id": format!("orphan-{n}"), "kind": "environment",
                "tool": "cargo", "call_id": format!("gone-{n}"), "success": false,
                "text": log.clone()}),
            serde_json::json!({"id": format!("content-{n}"), "kind": "agent",
                "role": "assistant", "content": [
                    {"type": "text", "text": format!("Step {n}: *fixed* the `cache` <b>here</b>.")},
                    {"type": "text", "text": log.clone()}]}),
        ];
        chunks.splice(n..n, extra);
    }
    MemoryState::from_json_str(&json.to_string()).unwrap()
}

fn builder(threads: usize, budget: usize) -> ContextBuilder {
    let mut builder = ContextBuilder::new();
    builder.model("gpt-4o").max_tokens(budget).threads(threads);
    builder
}

fn json(result: &Result<BuildResult>) -> String {
    match result {
        Ok(result) => serde_json::to_string(result).expect("a result serializes"),
        Err(error) => format!("error: {error}"),
    }
}

/// The exact counter, noting the threads that call it.
#[derive(Debug)]
struct ThreadsSeen {
    counter: TiktokenCounter,
    seen: Mutex<HashSet<ThreadId>>,
}

impl TokenCounter for ThreadsSeen {
    fn count(&self, text: &str) -> usize {
        if let Ok(mut seen) = self.seen.lock() {
            seen.insert(std::thread::current().id());
        }
        self.counter.count(text)
    }
    fn is_exact(&self) -> bool {
        true
    }
    fn encoding_name(&self) -> &str {
        self.counter.encoding_name()
    }
    fn additive_at_clean_cuts(&self) -> bool {
        true
    }
}

#[test]
fn a_build_counts_on_as_many_threads_as_it_is_given() {
    let state = long_session();
    for threads in [1, 2, 3] {
        let counter = Arc::new(ThreadsSeen {
            counter: TiktokenCounter::new(Encoding::O200kBase).unwrap(),
            seen: Mutex::default(),
        });
        let mut builder = builder(threads, 128_000);
        builder.counter(counter.clone());
        builder.build(&state).unwrap();
        // The helpers are started once for the build, beside the caller's.
        assert_eq!(counter.seen.lock().unwrap().len(), threads);
    }
}

/// Renders the user's messages, and panics on one.
struct PanicsOn(&'static str);

impl ChunkRenderer for PanicsOn {
    fn can_render(&self, chunk: &MemoryChunk) -> bool {
        chunk.kind == ChunkKind::Agent && chunk.role == Some(Role::User)
    }
    fn role(&self, _: &MemoryChunk) -> Role {
        Role::User
    }
    fn render(&self, chunk: &MemoryChunk, ctx: &RenderContext<'_>, out: &mut String) {
        assert_ne!(chunk.id, self.0, "the renderer fails on this chunk");
        ctx.write_element(
            out,
            "said",
            &[("id", Some(&chunk.id))],
            chunk.text.as_deref(),
        );
    }
    fn tags(&self) -> Vec<String> {
        vec!["said".into()]
    }
}

/// The id of a user message in the middle of `state`.
fn middle_user_turn(state: &MemoryState) -> &'static str {
    let users: Vec<&MemoryChunk> = state
        .chunks
        .iter()
        .filter(|c| c.kind == ChunkKind::Agent && c.role == Some(Role::User))
        .collect();
    users[users.len() / 2].id.clone().leak()
}

#[test]
fn a_renderer_that_panics_on_a_helper_thread_panics_the_build_not_hangs_it() {
    let state = long_session();
    let id = middle_user_turn(&state);
    for threads in [1, 2] {
        let mut builder = builder(threads, 128_000);
        builder.register_renderer(Arc::new(PanicsOn(id)));
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| builder.build(&state)));
        assert!(outcome.is_err(), "{threads} threads");
    }
}

#[test]
fn a_newer_chunk_that_fails_wins_over_an_older_one_that_panics() {
    let mut state = long_session();
    // The newest tool result cannot hold its cap: walking newest first,
    // one thread returns that error and never renders the user turn
    // before it, in the same batch, whose renderer panics.
    let newest_result = state
        .chunks
        .iter()
        .rposition(|c| c.kind == ChunkKind::Environment && c.text.is_some())
        .unwrap();
    state.chunks[newest_result].tool = Some("a_tool_with_a_long_name_".repeat(12).into());
    let older_user = state.chunks[..newest_result]
        .iter()
        .rposition(|c| c.kind == ChunkKind::Agent && c.role == Some(Role::User))
        .unwrap();
    let id: &'static str = state.chunks[older_user].id.clone().leak();
    for threads in [1, 2, 2, 2, 2, 2] {
        let mut builder = builder(threads, 128_000);
        builder.register_renderer(Arc::new(PanicsOn(id)));
        builder.policy_mut().caps.set_tag("tool_result", Some(64));
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| builder.build(&state)));
        let error = outcome.expect("no panic").unwrap_err();
        assert!(error.to_string().contains("leaves no room"), "{error}");
    }
}

#[test]
fn a_build_asked_for_more_threads_than_the_most_uses_the_most() {
    let state = long_session();
    let one = json(&builder(1, 128_000).build(&state));
    let counter = Arc::new(ThreadsSeen {
        counter: TiktokenCounter::new(Encoding::O200kBase).unwrap(),
        seen: Mutex::default(),
    });
    let mut many = builder(100_000, 128_000);
    many.counter(counter.clone());
    let started = std::time::Instant::now();
    let result = json(&many.build(&state));
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    let seen = counter.seen.lock().unwrap().len();
    assert!(
        (2..=ContextBuilder::MAX_THREADS).contains(&seen),
        "{seen} threads"
    );
    assert!(one.starts_with('{'), "{}", &one[..200]);
    assert_eq!(one, result);
}

/// Renders the user's messages, noting the most threads the process had
/// while rendering one.
#[cfg(target_os = "linux")]
#[derive(Default)]
struct NotesThreads {
    most: Mutex<usize>,
}

#[cfg(target_os = "linux")]
impl ChunkRenderer for NotesThreads {
    fn can_render(&self, chunk: &MemoryChunk) -> bool {
        chunk.kind == ChunkKind::Agent && chunk.role == Some(Role::User)
    }
    fn role(&self, _: &MemoryChunk) -> Role {
        Role::User
    }
    fn render(&self, chunk: &MemoryChunk, ctx: &RenderContext<'_>, out: &mut String) {
        let threads = process_threads();
        let mut most = self.most.lock().unwrap();
        *most = (*most).max(threads);
        drop(most);
        ctx.write_element(
            out,
            "said",
            &[("id", Some(&chunk.id))],
            chunk.text.as_deref(),
        );
    }
    fn tags(&self) -> Vec<String> {
        vec!["said".into()]
    }
}

#[cfg(target_os = "linux")]
fn process_threads() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

#[cfg(target_os = "linux")]
#[test]
fn a_build_starts_no_more_threads_than_its_batch_has_chunks() {
    // Two long user messages: one batch worth rendering ahead, of two
    // chunks, so one helper beside the walk's thread.
    let mut rng = session_gen::Rng::new(5);
    let chunks: Vec<MemoryChunk> = (0..2)
        .map(|n| {
            MemoryChunk::agent(
                format!("long-{n}"),
                Role::User,
                session_gen::prose(&mut rng, 12_000),
            )
        })
        .collect();
    let state = MemoryState::from_json_value(serde_json::json!({ "chunks": chunks })).unwrap();
    let results = [1, ContextBuilder::MAX_THREADS].map(|threads| {
        let notes = Arc::new(NotesThreads::default());
        let mut builder = builder(threads, 128_000);
        builder.register_renderer(notes.clone());
        let before = process_threads();
        let result = json(&builder.build(&state));
        let most = *notes.most.lock().unwrap();
        (result, most.saturating_sub(before))
    });
    assert!(results[0].0.starts_with('{'), "{}", &results[0].0[..200]);
    assert_eq!(results[0].0, results[1].0);
    // Tests running beside this one start a few threads of their own; 63
    // helpers would be far past them.
    assert!(results[1].1 <= 8, "{} more threads", results[1].1);
}

#[test]
fn a_build_on_several_threads_is_the_build_on_one() {
    let state = varied_session();
    for budget in [128_000, 16_000] {
        for cap in [None, Some(300)] {
            let results: Vec<String> = [1, 2, 3]
                .map(|threads| {
                    let mut builder = builder(threads, budget);
                    builder.policy_mut().caps.set_tag("tool_result", cap);
                    json(&builder.build(&state))
                })
                .into();
            assert!(results[0].starts_with('{'), "{}", &results[0][..200]);
            assert_eq!(
                results[0], results[1],
                "2 threads, budget {budget}, cap {cap:?}"
            );
            assert_eq!(
                results[0], results[2],
                "3 threads, budget {budget}, cap {cap:?}"
            );
        }
    }
}

#[test]
fn an_error_found_ahead_is_the_one_the_walk_meets_first() {
    let mut state = long_session();
    // Two chunks a small cap cannot hold: the newer one is named, as a
    // build that renders newest first on one thread names it.
    let results: Vec<usize> = state
        .chunks
        .iter()
        .enumerate()
        .filter(|(_, c)| c.tool.is_some() && c.call_id.is_some() && c.text.is_some())
        .map(|(i, _)| i)
        .collect();
    let long_name = "a_tool_with_a_very_long_descriptive_name_".repeat(8);
    for &index in [results[5], results[results.len() - 40]].iter() {
        state.chunks[index].tool = Some(long_name.as_str().into());
    }
    let errors = [1, 2].map(|threads| {
        let mut builder = builder(threads, 128_000);
        builder.policy_mut().caps.set_tag("tool_result", Some(64));
        json(&builder.build(&state))
    });
    let newer = &state.chunks[results[results.len() - 40]].id;
    assert!(
        errors[0].contains(&format!("(id \"{newer}\")")),
        "{}",
        errors[0]
    );
    assert_eq!(errors[0], errors[1]);
}

#[test]
fn a_session_on_several_threads_renders_and_counts_what_one_would() {
    let state = long_session();
    let mut sessions =
        [1, 2].map(|threads| ContextSession::new(builder(threads, 64_000), state.clone()).unwrap());
    let [one, two] = &mut sessions;
    assert_eq!(json(&one.build()), json(&two.build()));
    assert_eq!(one.stats(), two.stats());
    // The next turn, through the full pipeline: most chunks from the
    // cache, the new ones (over 64 KB) made ready ahead.
    let mut rng = session_gen::Rng::new(9);
    let turn: Vec<MemoryChunk> = (0..12)
        .map(|n| {
            let text = session_gen::prose(&mut rng, 1_500);
            MemoryChunk::agent(format!("late-{n}"), Role::User, text)
        })
        .collect();
    for session in [&mut *one, &mut *two] {
        session.extend(turn.clone()).unwrap();
        session.forget_previous();
    }
    assert_eq!(json(&one.build()), json(&two.build()));
    assert_eq!(one.stats(), two.stats());
    assert_eq!(one.stats().chunks_rendered, 12, "{:?}", one.stats());
    assert!(one.stats().chunks_cached > 0, "{:?}", one.stats());
}

#[test]
fn the_cli_builds_the_same_on_any_number_of_threads() {
    let input = serde_json::to_string(&long_session()).unwrap();
    let built = [1, 2].map(|threads| {
        let threads = threads.to_string();
        run(
            &["build", "--max-tokens", "64000", "--threads", &threads],
            &input,
        )
    });
    assert_eq!((built[0].code, built[0].stderr.as_str()), (0, ""));
    assert!(built[0].stdout.len() > 100_000, "{}", built[0].stdout.len());
    assert_eq!(built[0].stdout, built[1].stdout);
    let none = run(&["build", "--threads", "0"], &input);
    assert_eq!(none.code, 2, "{}", none.stderr);
    assert!(
        none.stderr
            .contains("\"0\" is not a number of threads; give 1 to 64"),
        "{}",
        none.stderr
    );
    for command in ["build", "replay"] {
        let many = run(&[command, "--threads", "100000"], &input);
        assert_eq!(many.code, 2, "{command}: {}", many.stderr);
        assert_eq!(many.stdout, "", "{command}");
        assert!(
            many.stderr
                .contains("100000 threads is more than the most a build uses, 64; give 1 to 64"),
            "{command}: {}",
            many.stderr
        );
    }
}
