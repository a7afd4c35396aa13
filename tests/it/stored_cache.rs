//! A stored chat keeps the prompt cache: built by a fresh engine after
//! every batch (as a fresh process builds it), it returns the prompts a
//! session that made every build returns, byte for byte, so the prompt's
//! prefix breaks no more often; and when it cannot extend the last build,
//! its report says why.

use std::sync::Arc;

use crate::common::temp::TempDir;
use crate::common::*;
use crate::session_gen::{self, LoopShape, Rng, agent_loop, push_turn};
use agent_context::store::{self, Store};
use agent_context::{
    BuildResult, ContextBuilder, ContextEngine, ContextSession, MemoryChunk, MemoryState,
    PreviousBuild,
};
use proptest::prelude::*;

use crate::loops::{BUDGETS, builder};

/// A store that fresh engines open again by its location.
struct Stored {
    location: String,
    _scratch: Box<dyn std::any::Any + Send + Sync>,
}

impl Stored {
    fn sqlite() -> Stored {
        let dir = TempDir::new("stored-cache");
        let location = dir.join("chats.db").display().to_string();
        store::open(&location, true).unwrap();
        Stored {
            location,
            _scratch: Box::new(dir),
        }
    }

    #[cfg(feature = "postgres")]
    fn postgres() -> Stored {
        let schema = crate::common::postgres::Schema::new("stored_cache");
        let location = schema.url().to_owned();
        store::open(&location, true).unwrap();
        Stored {
            location,
            _scratch: Box::new(schema),
        }
    }

    /// The store as a new process opens it.
    fn open(&self) -> Arc<dyn Store> {
        store::open(&self.location, false).unwrap()
    }

    /// A fresh engine on the chat, as a new process makes it.
    fn engine(&self, builder: &ContextBuilder) -> ContextEngine {
        ContextEngine::open(self.open(), "chat", builder.clone()).unwrap()
    }
}

/// What a run of builds shows: how many builds there were, and the prompt
/// cache's reuse (stable prefix tokens over prompt tokens) of the session
/// and of the stored chat.
#[derive(Debug)]
#[allow(dead_code, reason = "read in failure messages")]
struct Reuse {
    builds: usize,
    /// Builds that read only the window and what came after it.
    windowed: usize,
    /// Builds that a `context_management` edit cleared something in.
    edited: usize,
    session: f64,
    stored: f64,
}

/// Appends `batches` after `opening` to a session and to the stored chat
/// (each batch saved by a fresh engine), builds both after every batch
/// (the chat by another fresh engine) and checks that their prompts and
/// stable prefixes are the same.
fn run(
    stored: &Stored,
    opening: &MemoryState,
    batches: &[Vec<MemoryChunk>],
    max_tokens: usize,
) -> Result<Reuse, TestCaseError> {
    let builder = builder(max_tokens);
    run_with(stored, opening, batches, (&builder, &builder))
}

/// [`run`] with the session's settings and the stored chat's engines'
/// (the same, but for the state a caller's hook keeps).
fn run_with(
    stored: &Stored,
    opening: &MemoryState,
    batches: &[Vec<MemoryChunk>],
    (session_builder, builder): (&ContextBuilder, &ContextBuilder),
) -> Result<Reuse, TestCaseError> {
    let mut session = ContextSession::new(session_builder.clone(), opening.clone()).unwrap();
    let mut writer = stored.engine(builder);
    writer.set_system_prompt(opening.system_prompt.clone());
    writer.extend(opening.chunks.iter().cloned()).unwrap();
    writer.save().unwrap();
    let (mut stable, mut total, mut windowed, mut edited) = ([0usize; 2], 0usize, 0, 0);
    for (index, batch) in batches.iter().enumerate() {
        let mut writer = stored.engine(builder);
        writer.extend(batch.iter().cloned()).unwrap();
        writer.save().unwrap();
        session.extend(batch.iter().cloned()).unwrap();
        let expected = session.build().unwrap();
        let built = stored.engine(builder).build().unwrap();
        let at = format!(
            "batch {index} of {} at {}",
            batches.len(),
            expected.max_tokens
        );
        assert_same_messages(&built, &expected, &at)?;
        prop_assert_eq!(
            built.stable_prefix_tokens,
            expected.stable_prefix_tokens,
            "{}",
            at
        );
        let outcome = if index == 0 {
            PreviousBuild::NoneKept
        } else {
            PreviousBuild::Extended
        };
        prop_assert_eq!(built.previous_build, Some(outcome), "{}", at);
        assert_within_budget(&built);
        stable[0] += expected.stable_prefix_tokens.unwrap_or(0);
        stable[1] += built.stable_prefix_tokens.unwrap_or(0);
        total += built.token_count;
        windowed += usize::from(built.unread_chunks > 0);
        edited += usize::from(!built.applied_edits.is_empty());
    }
    let share = |stable: usize| stable as f64 / total.max(1) as f64;
    Ok(Reuse {
        builds: batches.len(),
        windowed,
        edited,
        session: share(stable[0]),
        stored: share(stable[1]),
    })
}

fn assert_same_messages(
    built: &BuildResult,
    expected: &BuildResult,
    at: &str,
) -> Result<(), TestCaseError> {
    if built.messages == expected.messages {
        return Ok(());
    }
    let first = (built.messages.iter().zip(expected.messages.iter()))
        .position(|(a, b)| a != b)
        .unwrap_or(built.messages.len().min(expected.messages.len()));
    let show = |result: &BuildResult| {
        result.messages.get(first).map_or_else(String::new, |m| {
            let text = m.content.as_str();
            text[..text.floor_char_boundary(600)].to_owned()
        })
    };
    Err(TestCaseError::fail(format!(
        "{at}: the stored chat's prompt differs from the session's at message {first} of \
         {}/{}:\nstored: {}\nsession: {}",
        built.messages.len(),
        expected.messages.len(),
        show(built),
        show(expected)
    )))
}

/// The steps of a loop in batches of one to four steps, as agents save them.
fn loop_batches(seed: u64, shape: &LoopShape) -> (MemoryState, Vec<Vec<MemoryChunk>>) {
    let agent_loop = agent_loop(seed, shape);
    let batches = agent_loop.batches(&mut Rng::new(seed ^ 0x5EED));
    (agent_loop.opening, batches)
}

/// A turn-based chat: a pinned task, then `turns` turns (a user message,
/// thinking, tool calls and results, an answer), one batch each.
fn chat_batches(seed: u64, turns: usize, scale: usize) -> (MemoryState, Vec<Vec<MemoryChunk>>) {
    let opening = session_gen::session(seed, 0, scale);
    let mut rng = Rng::new(seed);
    let mut state = opening.clone();
    let batches = (0..turns)
        .map(|turn| {
            let before = state.chunks.len();
            push_turn(&mut state, &mut rng, turn, scale);
            state.chunks[before..].to_vec()
        })
        .collect();
    (opening, batches)
}

fn loop_shape() -> impl Strategy<Value = (u64, LoopShape)> {
    (any::<u64>(), 60usize..=400, prop::bool::weighted(0.3)).prop_map(|(seed, steps, users)| {
        let mut shape = LoopShape::new(steps);
        if users {
            shape.user_every = Some(40);
        }
        shape.pinned_at = Some(steps / 3);
        (seed, shape)
    })
}

proptest! {
    #![proptest_config(proptest_config_with(3))]

    /// Autonomous loops: one instruction, hundreds of steps with parallel
    /// calls and results up to ~20 KB, saved in batches and built after
    /// each by a fresh engine.
    #[test]
    fn a_stored_loop_returns_the_sessions_prompts((seed, shape) in loop_shape()) {
        let (opening, batches) = loop_batches(seed, &shape);
        for max_tokens in BUDGETS {
            let reuse = run(&Stored::sqlite(), &opening, &batches, max_tokens)?;
            prop_assert!((reuse.session - reuse.stored).abs() <= 0.02, "{reuse:?}");
            if max_tokens == 12_000 {
                prop_assert!(reuse.windowed > 0, "{reuse:?}");
            }
        }
    }

    /// Turn-based chats: a user message and its tool calls each turn.
    #[test]
    fn a_stored_chat_returns_the_sessions_prompts(seed in any::<u64>(), turns in 30usize..150, scale in 1usize..3) {
        let (opening, batches) = chat_batches(seed, turns, scale);
        for max_tokens in BUDGETS {
            let reuse = run(&Stored::sqlite(), &opening, &batches, max_tokens)?;
            prop_assert!((reuse.session - reuse.stored).abs() <= 0.02, "{reuse:?}");
        }
    }
}

/// The prompt of a build that starts cold: the one a builder with no
/// previous build makes of the branch.
fn assert_cold(engine: &mut ContextEngine, built: &BuildResult, builder: &ContextBuilder) {
    let cold = builder.build(engine.state().unwrap()).unwrap();
    assert_eq!(built.messages, cold.messages);
}

/// A chat stored from a loop's opening and `steps` steps, at `location`.
fn stored_loop(stored: &Stored, steps: usize) -> Vec<Vec<MemoryChunk>> {
    let (opening, batches) = loop_batches(3, &LoopShape::new(steps));
    let mut writer = stored.engine(&builder(12_000));
    writer.set_system_prompt(opening.system_prompt.clone());
    writer.extend(opening.chunks.iter().cloned()).unwrap();
    writer.save().unwrap();
    batches
}

fn append(stored: &Stored, chunks: &[MemoryChunk]) {
    let mut writer = stored.engine(&builder(12_000));
    writer.extend(chunks.iter().cloned()).unwrap();
    writer.save().unwrap();
}

/// Each way a build cannot extend the last one: none kept, other
/// settings, a head that does not descend from the kept one, a record that
/// does not read. Each starts cold, says so, and keeps its own record, which
/// the next build extends.
#[test]
fn a_build_that_cannot_extend_the_last_one_starts_cold_and_says_why() {
    let stored = Stored::sqlite();
    let batches = stored_loop(&stored, 120);
    let (twelve, sixteen) = (builder(12_000), builder(16_000));
    for batch in &batches[..batches.len() - 2] {
        append(&stored, batch);
    }
    let build = |builder: &ContextBuilder| {
        let mut engine = stored.engine(builder);
        let built = engine.build().unwrap();
        (engine, built)
    };
    let (mut engine, built) = build(&twelve);
    assert_eq!(built.previous_build, Some(PreviousBuild::NoneKept));
    assert_cold(&mut engine, &built, &twelve);
    assert!(
        built.excluded().next().is_some(),
        "the budget cuts the chat"
    );
    assert_eq!(
        build(&twelve).1.previous_build,
        Some(PreviousBuild::Extended)
    );

    // Other settings replace the record: the last writer's stands.
    let (mut engine, built) = build(&sixteen);
    assert_eq!(built.previous_build, Some(PreviousBuild::OtherSettings));
    assert_cold(&mut engine, &built, &sixteen);
    let (_, built) = build(&twelve);
    assert_eq!(built.previous_build, Some(PreviousBuild::OtherSettings));
    let mut other_policy = twelve.clone();
    other_policy.policy_mut().low_water = 0.7;
    assert_eq!(
        build(&other_policy).1.previous_build,
        Some(PreviousBuild::OtherSettings)
    );

    // A replaced message writes the branch again: the kept head is gone
    // from its path.
    let (_, built) = build(&twelve);
    assert_eq!(built.previous_build, Some(PreviousBuild::OtherSettings));
    let mut writer = stored.engine(&twelve);
    let answer = MemoryChunk::agent("answer", agent_context::Role::Assistant, "Done.");
    writer.replace_last_assistant(answer).unwrap();
    writer.save().unwrap();
    let (mut engine, built) = build(&twelve);
    assert_eq!(built.previous_build, Some(PreviousBuild::HeadMoved));
    assert_cold(&mut engine, &built, &twelve);

    // A record that does not read is no record.
    let db = rusqlite::Connection::open(&stored.location).unwrap();
    for garbage in ["{", "{\"format\":1}", "[]", "{\"format\":99,\"head\":1}"] {
        db.execute("UPDATE builds SET record = ?1", [garbage])
            .unwrap();
        let (mut engine, built) = build(&twelve);
        assert_eq!(built.previous_build, Some(PreviousBuild::Unreadable));
        assert_cold(&mut engine, &built, &twelve);
    }
    append(&stored, &batches[batches.len() - 2]);
    assert_eq!(
        build(&twelve).1.previous_build,
        Some(PreviousBuild::Extended)
    );

    // Another branch keeps its own record.
    let mut engine = stored.engine(&twelve);
    engine.rewind("instruction", Some("retry")).unwrap();
    engine.extend(batches[0].iter().cloned()).unwrap();
    engine.save().unwrap();
    let (_, built) = build(&twelve);
    assert_eq!(built.previous_build, Some(PreviousBuild::NoneKept));
    engine.switch_branch("main").unwrap();
    append(&stored, &batches[batches.len() - 1]);
    assert_eq!(
        build(&twelve).1.previous_build,
        Some(PreviousBuild::Extended)
    );
}

/// A store that refuses the record's write still builds: nothing is kept,
/// and the build warns that the next one in another process starts cold.
#[test]
fn a_store_that_refuses_the_record_still_builds_and_warns() {
    let stored = Stored::sqlite();
    let batches = stored_loop(&stored, 40);
    for batch in &batches {
        append(&stored, batch);
    }
    let db = rusqlite::Connection::open(&stored.location).unwrap();
    db.execute_batch(
        "CREATE TRIGGER refuse_records BEFORE INSERT ON builds
         BEGIN SELECT RAISE(ABORT, 'attempt to write a readonly database'); END;",
    )
    .unwrap();
    let twelve = builder(12_000);
    for _ in 0..2 {
        let mut engine = stored.engine(&twelve);
        let built = engine.build().unwrap();
        assert_eq!(built.previous_build, Some(PreviousBuild::NoneKept));
        assert_cold(&mut engine, &built, &twelve);
        let warned = built.warnings.iter().any(|w| {
            w.contains("could not be kept") && w.contains("attempt to write a readonly database")
        });
        assert!(warned, "{:?}", built.warnings);
    }
}

/// The sequence holds across real processes: `chat append` and `chat
/// build` of the command line after every batch print the session's
/// prompts.
#[test]
fn chat_build_in_fresh_processes_prints_the_sessions_prompts() {
    let stored = Stored::sqlite();
    let (opening, batches) = loop_batches(11, &LoopShape::new(90));
    let twelve = builder(12_000);
    let mut session = ContextSession::new(twelve.clone(), opening.clone()).unwrap();
    let append_input = |chunks: &[MemoryChunk], system: Option<&str>| {
        let mut state = MemoryState::new();
        state.system_prompt = system.map(str::to_owned);
        state.chunks = chunks.to_vec();
        serde_json::to_string(&state).unwrap()
    };
    let db = stored.location.as_str();
    let chat = ["--db", db, "--chat", "chat"];
    let opened = append_input(&opening.chunks, opening.system_prompt.as_deref());
    let appended =
        crate::common::cli::run(&[&["chat", "append"][..], &chat, &["-"]].concat(), &opened);
    assert_eq!(appended.code, 0, "{}", appended.stderr);
    let mut extended = 0;
    for (index, batch) in batches.iter().enumerate() {
        let input = append_input(batch, None);
        let appended =
            crate::common::cli::run(&[&["chat", "append"][..], &chat, &["-"]].concat(), &input);
        assert_eq!(appended.code, 0, "{}", appended.stderr);
        let flags = ["--max-tokens", "12000", "--reserve", "1000"];
        let built = crate::common::cli::run(&[&["chat", "build"][..], &chat, &flags].concat(), "");
        assert_eq!(built.code, 0, "{}", built.stderr);
        let report: serde_json::Value = serde_json::from_str(&built.stdout).unwrap();
        session.extend(batch.iter().cloned()).unwrap();
        let expected = serde_json::to_value(session.build().unwrap()).unwrap();
        assert_eq!(report["messages"], expected["messages"], "batch {index}");
        assert_eq!(
            report["stable_prefix_tokens"], expected["stable_prefix_tokens"],
            "batch {index}"
        );
        extended += usize::from(report["previous_build"] == "extended");
    }
    assert_eq!(extended, batches.len() - 1);
}

/// The same on PostgreSQL: a loop built by fresh engines at 32k.
#[cfg(feature = "postgres")]
#[test]
fn a_loop_stored_on_postgres_returns_the_sessions_prompts() {
    let (opening, batches) = loop_batches(5, &LoopShape::new(160));
    for max_tokens in [12_000, 32_000] {
        let reuse = run(&Stored::postgres(), &opening, &batches, max_tokens).unwrap();
        assert!(reuse.windowed > 0, "{reuse:?}");
    }
}

/// Two runtimes building one branch at once while a third appends to it:
/// every build is valid, whichever record it extends or replaces, and the
/// branch's next build still extends the last one kept.
#[test]
fn runtimes_building_one_branch_at_once_all_get_valid_prompts() {
    let stored = Stored::sqlite();
    let batches = stored_loop(&stored, 120);
    let twelve = builder(12_000);
    let (early, late) = batches.split_at(batches.len() / 3);
    early.iter().for_each(|batch| append(&stored, batch));
    std::thread::scope(|scope| {
        scope.spawn(|| late.iter().for_each(|batch| append(&stored, batch)));
        for _ in 0..2 {
            scope.spawn(|| {
                for _ in 0..20 {
                    let mut engine = stored.engine(&twelve);
                    let built = engine.build().unwrap();
                    let state = engine.state().unwrap().clone();
                    assert_within_budget(&built);
                    assert_units_whole(&state, &built);
                    assert_protected_present(&state, &built);
                }
            });
        }
    });
    stored.engine(&twelve).build().unwrap();
    let built = stored.engine(&twelve).build().unwrap();
    assert_eq!(built.previous_build, Some(PreviousBuild::Extended));
}

/// A PostgreSQL role that may only read the store still builds: nothing is
/// kept, and each build warns and starts cold.
#[cfg(feature = "postgres")]
#[test]
fn a_read_only_postgres_role_still_builds_and_warns() {
    let schema = crate::common::postgres::Schema::new("read_only");
    let writer = Stored {
        location: schema.url().to_owned(),
        _scratch: Box::new(()),
    };
    store::open(&writer.location, true).unwrap();
    let batches = stored_loop(&writer, 40);
    batches.iter().for_each(|batch| append(&writer, batch));
    let role = format!("ro_{}", std::process::id());
    let schema_name = schema.url().rsplit("schema=").next().unwrap().to_owned();
    let mut admin = schema.client();
    admin
        .batch_execute(&format!(
            "DROP ROLE IF EXISTS {role}; CREATE ROLE {role} LOGIN; \
             GRANT USAGE ON SCHEMA {schema_name} TO {role}; \
             GRANT SELECT ON ALL TABLES IN SCHEMA {schema_name} TO {role};"
        ))
        .unwrap();
    let url = schema
        .url()
        .replacen("://agent_context@", &format!("://{role}@"), 1);
    assert_ne!(url, schema.url(), "the test server's user is agent_context");
    let reader = Stored {
        location: url,
        _scratch: Box::new(()),
    };
    // A role that may not even read the record builds cold, and says so.
    admin
        .batch_execute(&format!(
            "REVOKE SELECT ON {schema_name}.builds FROM {role}"
        ))
        .unwrap();
    let twelve = builder(12_000);
    let built = reader.engine(&twelve).build().unwrap();
    assert_eq!(built.previous_build, Some(PreviousBuild::Unreadable));
    let warned = built
        .warnings
        .iter()
        .any(|w| w.contains("could not be read"));
    assert!(warned, "{:?}", built.warnings);
    admin
        .batch_execute(&format!("GRANT SELECT ON {schema_name}.builds TO {role}"))
        .unwrap();
    for _ in 0..2 {
        let mut engine = reader.engine(&twelve);
        let built = engine.build().unwrap();
        assert_eq!(built.previous_build, Some(PreviousBuild::NoneKept));
        assert_cold(&mut engine, &built, &twelve);
        let warned = built
            .warnings
            .iter()
            .any(|w| w.contains("could not be kept"));
        assert!(warned, "{:?}", built.warnings);
    }
    drop(reader);
    drop(schema);
    admin
        .batch_execute(&format!("DROP OWNED BY {role}; DROP ROLE {role};"))
        .unwrap();
}

/// An engine opened before another runtime appended and built starts
/// cold at its own head and leaves the newer record in place; a replaced
/// message not yet saved starts cold too, as the save rewrites the branch.
#[test]
fn a_stale_engine_or_a_pending_replacement_starts_cold_and_keeps_the_newer_record() {
    let stored = Stored::sqlite();
    let batches = stored_loop(&stored, 80);
    let twelve = builder(12_000);
    let (early, late) = batches.split_at(batches.len() - 3);
    early.iter().for_each(|batch| append(&stored, batch));
    stored.engine(&twelve).build().unwrap();
    let mut stale = stored.engine(&twelve);
    late.iter().for_each(|batch| append(&stored, batch));
    assert_eq!(
        stored.engine(&twelve).build().unwrap().previous_build,
        Some(PreviousBuild::Extended)
    );
    let built = stale.build().unwrap();
    assert_eq!(built.previous_build, Some(PreviousBuild::HeadMoved));
    assert_cold(&mut stale, &built, &twelve);
    assert_eq!(
        stored.engine(&twelve).build().unwrap().previous_build,
        Some(PreviousBuild::Extended)
    );

    let mut engine = stored.engine(&twelve);
    let answer = MemoryChunk::agent("answer", agent_context::Role::Assistant, "Done.");
    engine.replace_last_assistant(answer).unwrap();
    let built = engine.build().unwrap();
    assert_eq!(built.previous_build, Some(PreviousBuild::HeadMoved));
    assert_cold(&mut engine, &built, &twelve);
}

/// A loop under Anthropic's context editing, which a build cannot plan
/// from the newest chunks alone: the engine reads the whole branch and
/// repeats the record's cut, and still returns the session's prompts.
#[test]
fn a_stored_loop_under_context_editing_returns_the_sessions_prompts() {
    let (opening, batches) = loop_batches(17, &LoopShape::new(120));
    let management: agent_context::budget::ContextManagement = serde_json::from_value(
        serde_json::json!({"edits": [{"type": "clear_tool_uses_20250919",
            "trigger": {"type": "input_tokens", "value": 9000},
            "keep": {"type": "tool_uses", "value": 3}}]}),
    )
    .unwrap();
    let mut managed = builder(32_000);
    managed.policy_mut().context_management = Some(management);
    let reuse = run_with(&Stored::sqlite(), &opening, &batches, (&managed, &managed)).unwrap();
    assert_eq!(reuse.windowed, 0, "{reuse:?}");
    assert!(reuse.edited > 0, "the edits cleared nothing: {reuse:?}");
}

/// Summaries numbered in the order they were asked for: a build that asks
/// again where the session reused its summary shows another number.
struct Numbered(std::sync::atomic::AtomicUsize);

impl agent_context::budget::Summarizer for Numbered {
    fn summarize(&self, dropped: &[&MemoryChunk], _max_tokens: usize) -> Option<String> {
        let n = self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Some(format!("Summary {n} of {} chunks.", dropped.len()))
    }
}

/// A loop with a summarizer: the stored chat reuses the summary its record
/// keeps while the cut holds, as the session does, and asks for a new one
/// exactly when the session does (each side has its own summarizer).
#[test]
fn a_stored_loop_with_a_summarizer_reuses_its_summary_as_the_session_does() {
    let (opening, batches) = loop_batches(23, &LoopShape::new(120));
    let numbered = |max_tokens| {
        let mut builder = builder(max_tokens);
        let summarizer = Numbered(std::sync::atomic::AtomicUsize::new(0));
        builder.policy_mut().set_summarizer(Arc::new(summarizer));
        builder
    };
    let (session_builder, engine_builder) = (numbered(12_000), numbered(12_000));
    let stored = Stored::sqlite();
    let reuse = run_with(
        &stored,
        &opening,
        &batches,
        (&session_builder, &engine_builder),
    )
    .unwrap();
    assert_eq!(reuse.windowed, 0, "{reuse:?}");
    let last = stored.engine(&engine_builder).build().unwrap();
    let summarized = last
        .messages
        .iter()
        .any(|m| m.content.as_str().contains("Summary "));
    assert!(summarized, "no summary in the prompt");
}

/// A model counted by estimate keeps no counts in the store, so every
/// build reads the whole branch: it still repeats the record's cut and
/// returns the session's prompts.
#[test]
fn a_stored_loop_counted_by_estimate_returns_the_sessions_prompts() {
    let (opening, batches) = loop_batches(29, &LoopShape::new(100));
    let mut claude = builder(32_000);
    claude.model("claude-sonnet-4");
    let reuse = run_with(&Stored::sqlite(), &opening, &batches, (&claude, &claude)).unwrap();
    assert_eq!(reuse.windowed, 0, "{reuse:?}");
}
