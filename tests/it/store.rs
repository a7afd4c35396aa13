//! The store conformance suite: one set of tests, run against every
//! backend (a SQLite file, SQLite in memory and, with the `postgres`
//! feature, a PostgreSQL server), through the engine and the `Store` trait.

use std::sync::Arc;

#[cfg(feature = "postgres")]
use crate::common;
use crate::common::limits::MAIN_BRANCH;
use crate::common::temp::TempDir;
use crate::common::*;
use agent_context::budget::ContextManagement;
use agent_context::fragment::{fragment, role};
use agent_context::store::{self, SqliteStore, Store};
use agent_context::{
    ChunkKind, ContextBuilder, ContextEngine, ContextSession, ErrorKind, MemoryChunk, MemoryState,
    PreviousBuild, Role,
};
use proptest::prelude::*;
use serde_json::json;

/// A backend under test: a store, and how to open it again as a fresh
/// process would.
struct Backend {
    name: &'static str,
    store: Arc<dyn Store>,
    /// Where a fresh process finds the store (`None`: in memory).
    location: Option<String>,
    /// What holds the store's data until the test ends.
    _scratch: Box<dyn std::any::Any>,
}

impl Backend {
    /// The store as a new process finds it (the same handle, in memory).
    fn reopen(&self) -> Arc<dyn Store> {
        match &self.location {
            Some(location) => store::open(location, false).unwrap(),
            None => Arc::clone(&self.store),
        }
    }

    fn at(name: &'static str, location: String, scratch: Box<dyn std::any::Any>) -> Backend {
        Backend {
            name,
            store: store::open(&location, true).unwrap(),
            location: Some(location),
            _scratch: scratch,
        }
    }
}

/// An empty SQLite file, the first of [`backends`]: for the property tests
/// that run on one backend, without a schema made on the test server for
/// every case and never used.
fn sqlite_file() -> Backend {
    let dir = TempDir::new("store");
    let path = dir.join("chats.db").display().to_string();
    Backend::at("sqlite file", path, Box::new(dir))
}

/// Every backend, empty: a SQLite file, SQLite in memory, and with the
/// `postgres` feature a schema on the test server.
fn backends() -> Vec<Backend> {
    #[cfg_attr(not(feature = "postgres"), allow(unused_mut))]
    let mut backends = vec![
        sqlite_file(),
        Backend {
            name: "sqlite memory",
            store: Arc::new(SqliteStore::in_memory().unwrap()),
            location: None,
            _scratch: Box::new(()),
        },
    ];
    #[cfg(feature = "postgres")]
    {
        let schema = common::postgres::Schema::new("store");
        let url = schema.url().to_owned();
        backends.push(Backend::at("postgres", url, Box::new(schema)));
    }
    backends
}

fn builder() -> ContextBuilder {
    let mut builder = ContextBuilder::new();
    builder.model("gpt-4o").max_tokens(2_000);
    builder
}

fn open(store: &Arc<dyn Store>, chat: &str) -> ContextEngine {
    ContextEngine::open(Arc::clone(store), chat, builder()).unwrap()
}

fn user(id: &str, text: &str) -> MemoryChunk {
    MemoryChunk::agent(id, Role::User, text)
}

fn assistant(id: &str, text: &str) -> MemoryChunk {
    MemoryChunk::agent(id, Role::Assistant, text)
}

fn ids(engine: &mut ContextEngine) -> Vec<String> {
    engine
        .state()
        .unwrap()
        .chunks
        .iter()
        .map(|c| c.id.clone())
        .collect()
}

fn long_state(turns: usize) -> MemoryState {
    let mut state = MemoryState::new()
        .with_system_prompt("You are a careful agent.")
        .with_fragment(role("Reviewer"));
    for turn in 0..turns {
        let words = "lorem ipsum dolor sit amet ".repeat(20 + turn % 7);
        state = state
            .with_chunk(user(
                &format!("u{turn}"),
                &format!("question {turn}: {words}"),
            ))
            .with_chunk(assistant(
                &format!("a{turn}"),
                &format!("answer {turn}: {words}"),
            ));
    }
    state
}

#[test]
fn an_engine_takes_new_settings_only_when_they_compile() {
    let store: Arc<dyn Store> = Arc::new(SqliteStore::in_memory().unwrap());
    let mut engine = open(&store, "chat");
    engine.push(user("u1", "hi")).unwrap();
    assert_eq!(engine.build().unwrap().max_tokens, 2_000);
    let mut bad = builder();
    bad.model("");
    assert!(engine.set_builder(&bad).is_err());
    assert_eq!(engine.build().unwrap().max_tokens, 2_000);
    let mut wider = builder();
    wider.max_tokens(3_000);
    engine.set_builder(&wider).unwrap();
    assert_eq!(engine.build().unwrap().max_tokens, 3_000);
}

#[test]
fn batches_appended_come_back_as_they_went_in() {
    for backend in backends() {
        let state = long_state(12);
        let mut engine = open(&backend.store, "chat");
        engine.set_system_prompt(state.system_prompt.clone());
        engine.set_fragments(state.fragments.clone());
        for batch in state.chunks.chunks(5) {
            engine.extend(batch.iter().cloned()).unwrap();
            engine.save().unwrap();
        }
        assert!(!engine.has_pending());
        let mut again = open(&backend.reopen(), "chat");
        assert_eq!(again.state().unwrap(), &state, "{}", backend.name);
        assert_eq!(again.head(), engine.head(), "{}", backend.name);
        let branches = again.branches().unwrap();
        assert_eq!(branches.len(), 1);
        assert_eq!((branches[0].chunks, branches[0].active), (24, true));
    }
}

#[test]
fn a_batch_with_an_invalid_chunk_stores_nothing() {
    for backend in backends() {
        let mut engine = open(&backend.store, "chat");
        engine.push(user("u1", "hello")).unwrap();
        engine.save().unwrap();
        let head = engine.head();
        let bad = MemoryChunk::new("bad", agent_context::ChunkKind::Agent); // no role
        let batch = vec![assistant("a1", "hi"), bad, user("u2", "more")];
        assert!(engine.extend(batch).is_err());
        let duplicate = vec![assistant("a1", "hi"), user("u1", "again")];
        assert!(engine.extend(duplicate).is_err());
        assert!(!engine.has_pending());
        engine.save().unwrap();
        let mut again = open(&backend.reopen(), "chat");
        assert_eq!(ids(&mut again), ["u1"], "{}", backend.name);
        assert_eq!(again.head(), head);
    }
}

#[test]
fn a_stale_engine_gets_a_conflict_and_writes_nothing() {
    for backend in backends() {
        let mut first = open(&backend.store, "chat");
        let mut second = open(&backend.store, "chat");
        first.push(user("u1", "from the first")).unwrap();
        first.save().unwrap();
        second.push(user("v1", "from the second")).unwrap();
        let error = second.save().unwrap_err();
        match error.kind() {
            ErrorKind::Conflict {
                expected, actual, ..
            } => {
                assert_eq!(*expected, None);
                assert_eq!(*actual, first.head());
            }
            other => panic!("{}: expected a conflict, got {other:?}", backend.name),
        }
        assert!(second.has_pending(), "the change is kept to apply again");
        assert_eq!(ids(&mut open(&backend.reopen(), "chat")), ["u1"]);
        // Reloaded, it applies its change on top.
        second.reload().unwrap();
        second.push(user("v1", "from the second")).unwrap();
        second.save().unwrap();
        assert_eq!(ids(&mut open(&backend.reopen(), "chat")), ["u1", "v1"]);
        // A stale engine's fork and checkpoint name what it has loaded.
        let seen = first.head();
        first.fork("seen").unwrap();
        first.checkpoint("seen").unwrap();
        let branches = backend.store.branches("chat").unwrap();
        let fork = branches.iter().find(|b| b.name == "seen").unwrap();
        assert_eq!((fork.head, fork.chunks), (seen, 1));
        let checkpoints = backend.store.checkpoints("chat").unwrap();
        assert_eq!(checkpoints[0].node, seen);
    }
}

#[test]
fn rewind_fork_checkpoint_and_restore_leave_other_branches_intact() {
    for backend in backends() {
        let mut engine = open(&backend.store, "chat");
        engine
            .extend([
                user("u1", "a"),
                assistant("a1", "b"),
                user("u2", "c"),
                assistant("a2", "d"),
            ])
            .unwrap();
        engine.save().unwrap();
        let main_head = engine.head();
        engine.checkpoint("four").unwrap();
        engine.fork("spare").unwrap();
        assert_eq!(engine.branch(), MAIN_BRANCH, "a fork does not switch");

        let name = engine.rewind("u2", None).unwrap();
        assert_eq!(name, "main-v2");
        assert_eq!(ids(&mut engine), ["u1", "a1"]);
        engine.push(user("u2", "another question")).unwrap();
        engine.save().unwrap();
        assert_eq!(
            engine.rewind("u2", None).unwrap(),
            "main-v3",
            "{}",
            backend.name
        );
        assert_eq!(ids(&mut engine), ["u1", "a1"]);

        // A new process opens the active branch.
        let fresh = open(&backend.reopen(), "chat");
        assert_eq!(fresh.branch(), "main-v3");
        let branches = fresh.branches().unwrap();
        let summary: Vec<_> = branches
            .iter()
            .map(|b| (b.name.as_str(), b.chunks, b.active))
            .collect();
        assert_eq!(
            summary,
            [
                ("main", 4, false),
                ("main-v2", 3, false),
                ("main-v3", 2, true),
                ("spare", 4, false)
            ]
        );
        let mut main =
            ContextEngine::open_branch(backend.reopen(), "chat", "main", builder()).unwrap();
        assert_eq!(ids(&mut main), ["u1", "a1", "u2", "a2"]);
        assert_eq!(main.head(), main_head);

        let restored = engine.restore("four", Some("back")).unwrap();
        assert_eq!(restored, "back");
        assert_eq!(ids(&mut engine), ["u1", "a1", "u2", "a2"]);
        engine.switch_branch("main-v2").unwrap();
        assert_eq!(ids(&mut engine), ["u1", "a1", "u2"]);
        assert_eq!(
            engine.state().unwrap().chunks[2].text.as_deref(),
            Some("another question")
        );

        // Unsaved changes block moving off the branch; bad names are errors.
        engine.push(user("u9", "pending")).unwrap();
        assert!(matches!(
            engine.switch_branch("main").unwrap_err().kind(),
            ErrorKind::Chat { .. }
        ));
        assert!(matches!(
            engine.rewind("a1", None).unwrap_err().kind(),
            ErrorKind::Chat { .. }
        ));
        engine.reload().unwrap();
        assert!(engine.rewind("nope", None).is_err());
        assert!(engine.restore("nope", None).is_err());
        assert!(engine.fork("main").is_err(), "the name is taken");
        assert!(engine.switch_branch("nope").is_err());
        assert!(engine.fork("").is_err());
    }
}

#[test]
fn replacing_the_last_assistant_message_rewrites_only_this_branch() {
    for backend in backends() {
        let mut engine = open(&backend.store, "chat");
        // No assistant message yet: the replacement is appended.
        engine.push(user("u1", "question")).unwrap();
        engine
            .replace_last_assistant(assistant("a1", "draft"))
            .unwrap();
        assert_eq!(ids(&mut engine), ["u1", "a1"]);
        // A pending one is replaced before it is ever stored.
        engine
            .replace_last_assistant(assistant("a1", "second draft"))
            .unwrap();
        engine.save().unwrap();
        engine.checkpoint("drafted").unwrap();
        // A stored one is replaced in place, with what follows it kept.
        let mut call = MemoryChunk::new("t1", agent_context::ChunkKind::Workflow)
            .with_action("tool_call")
            .with_tool("bash")
            .with_call_id("k1");
        call.text = Some("ls".into());
        engine.push(call).unwrap();
        engine.save().unwrap();
        engine
            .replace_last_assistant(assistant("a1-final", "final answer"))
            .unwrap();
        assert_eq!(ids(&mut engine), ["u1", "a1-final", "t1"]);
        engine.save().unwrap();
        let mut fresh = open(&backend.reopen(), "chat");
        assert_eq!(
            ids(&mut fresh),
            ["u1", "a1-final", "t1"],
            "{}",
            backend.name
        );
        assert_eq!(
            fresh.state().unwrap().chunks[1].text.as_deref(),
            Some("final answer")
        );
        // The checkpoint still names the draft.
        let mut other = open(&backend.reopen(), "chat");
        other.restore("drafted", None).unwrap();
        assert_eq!(ids(&mut other), ["u1", "a1"]);
        assert_eq!(
            other.state().unwrap().chunks[1].text.as_deref(),
            Some("second draft")
        );
        // Only an assistant message can replace one.
        assert!(engine.replace_last_assistant(user("x", "no")).is_err());
        assert!(
            engine
                .replace_last_assistant(assistant("u1", "taken id"))
                .is_err()
        );
    }
}

#[test]
fn ids_of_any_content_are_data_and_chats_stay_apart() {
    let hostile = [
        "'; DROP TABLE chats; --".to_owned(),
        "quote \" and ' and `".to_owned(),
        "nul\0byte".to_owned(),
        "x".repeat(10_240),
        "é 🦀 \u{202e}".to_owned(),
        String::new(),
    ];
    // An empty id is an id, but no chat's.
    let chats = || hostile.iter().enumerate().filter(|(_, id)| !id.is_empty());
    for backend in backends() {
        for (n, chat) in chats() {
            let mut engine = open(&backend.store, chat);
            for (m, id) in hostile.iter().enumerate().filter(|(_, id)| !id.is_empty()) {
                engine.push(user(&format!("{id}{n}{m}"), id)).unwrap();
            }
            engine.save().unwrap();
            engine.fork(chat).unwrap();
            engine.checkpoint(&format!("{chat}!")).unwrap();
        }
        let store = backend.reopen();
        assert_eq!(
            store.chats().unwrap().len(),
            hostile.len() - 1,
            "{}",
            backend.name
        );
        for (n, chat) in chats() {
            let mut engine = open(&store, chat);
            let expected: Vec<String> = hostile
                .iter()
                .enumerate()
                .filter(|(_, id)| !id.is_empty())
                .map(|(m, id)| format!("{id}{n}{m}"))
                .collect();
            assert_eq!(ids(&mut engine), expected, "{}: chat {n}", backend.name);
            assert_eq!(engine.checkpoints().unwrap().len(), 1);
        }
    }
}

#[test]
fn a_fresh_process_builds_a_stored_chat_without_counting_it_again() {
    for backend in backends() {
        let state = long_state(40);
        let mut engine = open(&backend.store, "chat");
        engine.set_system_prompt(state.system_prompt.clone());
        engine.extend(state.chunks.iter().cloned()).unwrap();
        engine.save().unwrap();
        let mut fresh = open(&backend.reopen(), "chat");
        let mut result = fresh.build().unwrap();
        assert_eq!(result.previous_build, Some(PreviousBuild::NoneKept));
        result.previous_build = None;
        let stats = fresh.session().stats();
        assert_eq!(stats.tokens_counted, 0, "{}: {stats:?}", backend.name);
        assert!(
            result.excluded().next().is_some(),
            "the budget cuts the chat"
        );
        let cold = builder().build(fresh.state().unwrap()).unwrap();
        assert_eq!(
            serde_json::to_string(&result).unwrap(),
            serde_json::to_string(&cold).unwrap()
        );
        // Another encoding counts, then keeps its counts for the next one.
        let mut other = builder();
        other.model("gpt-4");
        let mut engine = ContextEngine::open(backend.reopen(), "chat", other.clone()).unwrap();
        engine.build().unwrap();
        assert!(engine.session().stats().tokens_counted > 0);
        assert_eq!(engine.keep_counts().unwrap(), 80);
        let mut engine = ContextEngine::open(backend.reopen(), "chat", other).unwrap();
        engine.build().unwrap();
        assert_eq!(engine.session().stats().tokens_counted, 0);
    }
}

#[test]
fn usage_is_recorded_and_calibrates_estimates_on_every_open() {
    for backend in backends() {
        let mut estimated = ContextBuilder::new();
        estimated.model("claude-sonnet-4").max_tokens(50_000);
        let mut engine =
            ContextEngine::open(backend.store.clone(), "chat", estimated.clone()).unwrap();
        engine.extend(long_state(3).chunks).unwrap();
        engine.save().unwrap();
        let before = engine.build().unwrap().token_count;
        engine.track_usage(before as u64 * 3, 120).unwrap();
        let after = engine.build().unwrap().token_count;
        assert!(after > before, "{before} -> {after}");
        let usage = backend.reopen().usage("chat").unwrap();
        assert_eq!(usage.len(), 1);
        assert_eq!(
            (usage[0].input_tokens, usage[0].output_tokens),
            (before as u64 * 3, 120)
        );
        let mut fresh = ContextEngine::open(backend.reopen(), "chat", estimated).unwrap();
        assert_eq!(
            fresh.build().unwrap().token_count,
            after,
            "{}",
            backend.name
        );
    }
}

#[test]
fn the_system_lane_and_metadata_are_stored() {
    for backend in backends() {
        let mut engine = open(&backend.store, "chat");
        engine.set_system_prompt(Some("Be brief.".into()));
        engine.set_fragments(vec![fragment("config", [json!({"debug": true})])]);
        engine.push(user("u1", "hi")).unwrap();
        engine.save().unwrap();
        backend
            .store
            .set_metadata("chat", &json!({"owner": "ops"}))
            .unwrap();
        let store = backend.reopen();
        let mut fresh = open(&store, "chat");
        assert_eq!(
            fresh.state().unwrap().system_prompt.as_deref(),
            Some("Be brief.")
        );
        assert_eq!(
            fresh.state().unwrap().fragments,
            engine.state().unwrap().fragments
        );
        let chat = store.chat("chat").unwrap().unwrap();
        assert_eq!(chat.metadata, json!({"owner": "ops"}));
        assert!(store.set_metadata("missing", &json!({})).is_err());
    }
}

/// A chat's `context_management` is kept in its system lane: it comes back
/// in a fresh process, a stale writer's change conflicts, and none clears it.
#[test]
fn the_context_management_is_kept_in_the_system_lane() {
    let management: ContextManagement = serde_json::from_value(json!({"edits": [
        {"type": "clear_tool_uses_20250919", "keep": {"type": "tool_uses", "value": 2},
         "exclude_tools": ["memory"]}
    ]}))
    .unwrap();
    for backend in backends() {
        let mut first = open(&backend.store, "chat");
        first.set_context_management(Some(management.clone()));
        first.push(user("u1", "hi")).unwrap();
        first.save().unwrap();
        let mut fresh = open(&backend.reopen(), "chat");
        let kept = fresh.state().unwrap().context_management.as_ref();
        assert_eq!(kept, Some(&management), "{}", backend.name);
        // Setting the one it has changes nothing.
        fresh.set_context_management(Some(management.clone()));
        assert!(!fresh.has_pending(), "{}", backend.name);
        fresh.set_context_management(None);
        fresh.save().unwrap();
        first.set_context_management(Some(ContextManagement::default()));
        assert!(first.save().unwrap_err().kind().is_conflict());
        let mut stored = open(&backend.reopen(), "chat");
        assert_eq!(
            stored.state().unwrap().context_management,
            None,
            "{}",
            backend.name
        );
        assert_eq!(
            stored.state().unwrap().system_prompt,
            None,
            "{}",
            backend.name
        );
        assert_eq!(ids(&mut stored), ["u1"], "{}", backend.name);
    }
}

#[test]
fn a_stale_system_lane_gets_a_conflict_and_writes_nothing() {
    for backend in backends() {
        let mut first = open(&backend.store, "chat");
        let mut second = open(&backend.store, "chat");
        first.set_system_prompt(Some("first".into()));
        first.save().unwrap();
        // Appending alone does not depend on the system lane.
        second.push(user("u1", "hi")).unwrap();
        second.save().unwrap();
        second.set_system_prompt(Some("second".into()));
        second.push(user("u2", "again")).unwrap();
        let error = second.save().unwrap_err();
        match error.kind() {
            ErrorKind::SystemConflict {
                expected, actual, ..
            } => assert_eq!((*expected, *actual), (0, 1), "{}", backend.name),
            other => panic!("{}: expected a conflict, got {other:?}", backend.name),
        }
        assert!(error.kind().is_conflict());
        let mut stored = open(&backend.reopen(), "chat");
        assert_eq!(
            stored.state().unwrap().system_prompt.as_deref(),
            Some("first")
        );
        assert_eq!(
            ids(&mut stored),
            ["u1"],
            "nothing of the refused save is written"
        );
        // Reloaded, its change lands, and the first engine is now stale.
        second.reload().unwrap();
        second.set_system_prompt(Some("second".into()));
        second.save().unwrap();
        first.set_system_prompt(Some("third".into()));
        assert!(first.save().unwrap_err().kind().is_conflict());
        let mut stored = open(&backend.reopen(), "chat");
        assert_eq!(
            stored.state().unwrap().system_prompt.as_deref(),
            Some("second")
        );
        // Setting what is there writes nothing, so it cannot conflict.
        first.reload().unwrap();
        first.set_system_prompt(Some("second".into()));
        first.push(user("u3", "same prompt")).unwrap();
        stored.set_system_prompt(Some("fourth".into()));
        stored.save().unwrap();
        first.save().unwrap();
        let mut stored = open(&backend.reopen(), "chat");
        assert_eq!(
            stored.state().unwrap().system_prompt.as_deref(),
            Some("fourth")
        );
        assert_eq!(ids(&mut stored), ["u1", "u3"], "{}", backend.name);
    }
}

proptest! {
    #![proptest_config(proptest_config())]

    /// `chat build` is `build` of `chat export`: a chat stored in batches
    /// and built by a fresh engine gives the cold build of its export.
    #[test]
    fn a_stored_chat_builds_as_its_export(
        state in session(24),
        max_tokens in 300usize..4_000,
        splits in prop::collection::vec(1usize..6, 1..8),
    ) {
        let backend = sqlite_file();
        let mut engine = open(&backend.store, "chat");
        engine.set_system_prompt(state.system_prompt.clone());
        let mut rest = state.chunks.as_slice();
        for split in splits.iter().cycle() {
            if rest.is_empty() {
                break;
            }
            let (batch, after) = rest.split_at((*split).min(rest.len()));
            engine.extend(batch.iter().cloned()).unwrap();
            engine.save().unwrap();
            rest = after;
        }
        engine.save().unwrap();
        let mut settings = builder();
        settings.max_tokens(max_tokens);
        let mut fresh = ContextEngine::open(backend.reopen(), "chat", settings.clone()).unwrap();
        let export = serde_json::to_string(fresh.state().unwrap()).unwrap();
        let exported = MemoryState::from_json_str(&export).unwrap();
        prop_assert_eq!(&exported, &state);
        match (fresh.build(), settings.build(&exported)) {
            (Ok(mut stored), Ok(cold)) => {
                prop_assert_eq!(stored.previous_build, Some(PreviousBuild::NoneKept));
                stored.previous_build = None;
                prop_assert_eq!(serde_json::to_string(&stored).unwrap(), serde_json::to_string(&cold).unwrap());
                if stored.truncated().next().is_none() {
                    prop_assert_eq!(fresh.session().stats().tokens_counted, 0);
                }
            }
            (Err(stored), Err(cold)) => prop_assert_eq!(stored.to_string(), cold.to_string()),
            (stored, cold) => prop_assert!(false, "stored {stored:?} vs cold {cold:?}"),
        }
    }
}

proptest! {
    #![proptest_config(proptest_config())]

    /// A build of a long chat from its newest chunks makes the prompt a
    /// build of its export makes; its report lists the chunks it read.
    #[test]
    fn a_long_chat_built_from_its_newest_chunks_is_built_as_its_export(
        state in prop_oneof![session(320), long_loop()],
        max_tokens in 300usize..1_500,
        first_read in 1usize..32,
    ) {
        let backend = sqlite_file();
        let mut engine = open(&backend.store, "chat");
        engine.set_system_prompt(state.system_prompt.clone());
        // Two saves, the second by a fresh engine: a result whose call the
        // first saved is told from an orphan through the store.
        let (older, newer) = state.chunks.split_at(state.chunks.len() / 2);
        engine.extend(older.iter().cloned()).unwrap();
        engine.save().unwrap();
        let mut engine = open(&backend.reopen(), "chat");
        engine.extend(newer.iter().cloned()).unwrap();
        engine.save().unwrap();
        let mut settings = builder();
        settings.max_tokens(max_tokens);
        let mut fresh = ContextEngine::open(backend.reopen(), "chat", settings.clone()).unwrap();
        fresh.set_first_read(first_read);
        match (fresh.build(), settings.build(&state)) {
            (Ok(stored), Ok(cold)) => assert_same_prompt(&stored, &cold)?,
            (Err(stored), Err(cold)) => prop_assert_eq!(stored.to_string(), cold.to_string()),
            (stored, cold) => prop_assert!(false, "stored {stored:?} vs cold {cold:?}"),
        }
    }
}

/// A long agent loop of 200 to 800 chunks: notes, thinking, tool calls
/// with one or two results, rarely a user message, now and then an orphan
/// result, a pinned, critical or system chunk, or a priority of its own.
fn long_loop() -> impl Strategy<Value = MemoryState> {
    let step = (0u8..100, 1usize..40, 0u8..100);
    prop::collection::vec(step, 80..300).prop_map(|steps| {
        let mut state = MemoryState::new().with_chunk(user("task", "Keep the build green."));
        for (i, (what, words, extra)) in steps.into_iter().enumerate() {
            let text = "word ".repeat(words);
            let mut chunks = match what {
                0..1 => vec![user(&format!("u{i}"), &text)],
                1..35 => vec![assistant(&format!("a{i}"), &text)],
                35..45 => {
                    vec![MemoryChunk::new(format!("t{i}"), ChunkKind::Thinking).with_text(text)]
                }
                45..47 => vec![
                    MemoryChunk::new(format!("o{i}"), ChunkKind::Environment)
                        .with_call_id(format!("gone{i}"))
                        .with_text(text),
                ],
                47..48 => {
                    vec![MemoryChunk::new(format!("s{i}"), ChunkKind::System).with_text(text)]
                }
                _ => {
                    let call = format!("k{i}");
                    let mut unit = vec![
                        MemoryChunk::new(format!("c{i}"), ChunkKind::Workflow)
                            .with_call_id(call.clone())
                            .with_text(format!("run {i}")),
                    ];
                    for r in 0..1 + usize::from(what % 2 == 0) {
                        unit.push(
                            MemoryChunk::new(format!("r{i}.{r}"), ChunkKind::Environment)
                                .with_call_id(call.clone())
                                .with_text(text.clone()),
                        );
                    }
                    unit
                }
            };
            match extra {
                0..2 => chunks[0].pinned = true,
                2..4 => chunks[0].retention = Some(agent_context::Retention::Critical),
                4..5 => chunks[0].priority = Some(50),
                _ => {}
            }
            for chunk in chunks {
                state = state.with_chunk(chunk);
            }
        }
        state
    })
}

/// One instruction, then `steps` tool steps, each with a short note: the
/// loop an autonomous agent stores.
fn agent_loop(steps: usize) -> MemoryState {
    let mut state = MemoryState::new().with_chunk(user("task", "Fix every failing test."));
    for step in 0..steps {
        let call = format!("call{step}");
        state = state
            .with_chunk(assistant(
                &format!("n{step}"),
                &format!("Step {step}: reading the log."),
            ))
            .with_chunk(
                MemoryChunk::new(format!("c{step}"), ChunkKind::Workflow)
                    .with_call_id(call.clone())
                    .with_text(format!("cat log{step}.txt")),
            )
            .with_chunk(
                MemoryChunk::new(format!("r{step}"), ChunkKind::Environment)
                    .with_call_id(call)
                    .with_text(format!("line {step}: ok\n").repeat(step % 5 + 1)),
            );
    }
    state
}

#[test]
fn a_long_chat_is_built_from_its_newest_chunks_as_its_export() {
    let mut chatty = MemoryState::new();
    for turn in 0..1_500 {
        chatty = chatty
            .with_chunk(user(&format!("u{turn}"), &format!("question {turn}")))
            .with_chunk(assistant(&format!("a{turn}"), &format!("answer {turn}")));
    }
    let pinned = {
        let mut state = agent_loop(1_000);
        state.chunks[40].pinned = true;
        state.chunks[43].retention = Some(agent_context::Retention::Critical);
        state
    };
    let cases = [
        ("loop", agent_loop(1_000)),
        ("chat", chatty),
        ("pinned", pinned),
    ];
    let runs = cases
        .iter()
        .flat_map(|case| backends().into_iter().map(move |backend| (case, backend)));
    for ((name, state), backend) in runs {
        let mut engine = open(&backend.store, "chat");
        engine.extend(state.chunks.iter().cloned()).unwrap();
        engine.save().unwrap();
        let mut settings = builder();
        settings.max_tokens(4_000);
        let mut fresh = ContextEngine::open(backend.reopen(), "chat", settings.clone()).unwrap();
        let stored = fresh.build().unwrap();
        let cold = settings.build(state).unwrap();
        assert!(
            stored.unread_chunks > state.chunks.len() / 2,
            "{name} on {}: {} of {} unread",
            backend.name,
            stored.unread_chunks,
            state.chunks.len()
        );
        assert_same_prompt(&stored, &cold).unwrap();
        // The report says so.
        let report = serde_json::to_value(&stored).unwrap();
        assert_eq!(report["unread_chunks"], stored.unread_chunks, "{name}");
    }
}

/// The plan's rules live once, in the plan layer, and a chat built from
/// its newest chunks asks them as a one-shot build and a session do: a rule
/// a policy sets (here, the assistant's notes rank below tool calls and
/// results instead of above them) moves all three alike.
#[test]
fn a_rule_flipped_in_the_policy_moves_builds_sessions_and_chat_builds_alike() {
    let state = agent_loop(1_000);
    for backend in backends() {
        let mut engine = open(&backend.store, "chat");
        engine.extend(state.chunks.iter().cloned()).unwrap();
        engine.save().unwrap();
        let mut prompts = Vec::new();
        for flipped in [false, true] {
            let mut settings = builder();
            settings.max_tokens(4_000);
            if flipped {
                settings.policy_mut().set_priority(Role::Assistant, 5);
            }
            let cold = settings.build(&state).unwrap();
            let session = ContextSession::new(settings.clone(), state.clone())
                .unwrap()
                .build()
                .unwrap();
            let mut fresh = ContextEngine::open(backend.reopen(), "chat", settings).unwrap();
            let stored = fresh.build().unwrap();
            let name = backend.name;
            assert!(stored.unread_chunks > 0, "{name}: the chat was read whole");
            assert_same_prompt(&session, &cold).unwrap();
            assert_same_prompt(&stored, &cold).unwrap();
            prompts.push(
                cold.messages
                    .iter()
                    .map(|m| m.content.to_string())
                    .collect::<Vec<_>>(),
            );
        }
        assert_ne!(
            prompts[0], prompts[1],
            "{}: the flip changed nothing",
            backend.name
        );
    }
}

/// A chat stored under other settings is built whole once; the counts that
/// build keeps carry the path's tallies, so the next build reads only the
/// newest chunks.
#[test]
fn counts_kept_by_a_whole_build_let_the_next_read_only_the_newest_chunks() {
    let state = agent_loop(1_000);
    for backend in backends() {
        let mut engine = open(&backend.store, "chat");
        engine.extend(state.chunks.iter().cloned()).unwrap();
        engine.save().unwrap();
        let mut other = ContextBuilder::new();
        other.model("gpt-4").max_tokens(4_000);
        let cold = other.build(&state).unwrap();
        let mut first = ContextEngine::open(backend.reopen(), "chat", other.clone()).unwrap();
        let whole = first.build().unwrap();
        assert_eq!(
            whole.unread_chunks, 0,
            "{}: no counts under gpt-4's yet",
            backend.name
        );
        assert_eq!(
            first.keep_counts().unwrap(),
            state.chunks.len(),
            "{}",
            backend.name
        );
        assert_same_prompt(&whole, &cold).unwrap();
        // The second build extends the first, kept in the store, as a
        // builder given the first as its previous build does.
        let mut second = ContextEngine::open(backend.reopen(), "chat", other.clone()).unwrap();
        let newest = second.build().unwrap();
        assert!(
            newest.unread_chunks > state.chunks.len() / 2,
            "{}",
            backend.name
        );
        assert_eq!(newest.previous_build, Some(PreviousBuild::Extended));
        let extended = other.clone().previous(&whole).build(&state).unwrap();
        assert_same_prompt(&newest, &extended).unwrap();
    }
}

/// Whether `stored` (maybe built from the newest chunks) makes the prompt
/// `cold` makes, and reports the same of every chunk it read.
fn assert_same_prompt(
    stored: &agent_context::BuildResult,
    cold: &agent_context::BuildResult,
) -> Result<(), TestCaseError> {
    let json = |r: &agent_context::BuildResult| serde_json::to_value(r).unwrap();
    let (mut stored_json, cold_json) = (json(stored), json(cold));
    // Only a stored chat's build says what it started from.
    if let Some(report) = stored_json.as_object_mut() {
        report.remove("previous_build");
    }
    for field in [
        "messages",
        "token_count",
        "elided",
        "trim_target",
        "warnings",
        "truncated",
    ] {
        prop_assert_eq!(&stored_json[field], &cold_json[field], "{}", field);
    }
    if stored.unread_chunks == 0 {
        prop_assert_eq!(stored_json, cold_json);
        return Ok(());
    }
    // Each chunk read is reported as the whole build reports it.
    prop_assert_eq!(
        stored.decisions.len() + stored.unread_chunks,
        cold.decisions.len()
    );
    for decision in stored.decisions.iter() {
        let same = cold.decisions.iter().find(|d| d.id == decision.id);
        prop_assert_eq!(Some(decision), same);
    }
    Ok(())
}

/// A store written by schema version 1 (before counts and usage): it opens,
/// is migrated in place, and its chats load, build and take new chunks.
#[test]
fn a_store_of_the_previous_schema_version_is_migrated() {
    let dir = TempDir::new("store");
    let path = dir.join("v1.db");
    std::fs::copy(V1_FIXTURE, &path).unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).unwrap());
    let version: u32 = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row("SELECT version FROM schema_version", [], |row| row.get(0))
        .unwrap();
    assert_eq!(version, 6);
    let mut engine = open(&store, "fixture");
    assert_eq!(ids(&mut engine), ["u1", "a1", "u2", "a2"]);
    assert_eq!(
        engine.state().unwrap().system_prompt.as_deref(),
        Some("You are terse.")
    );
    assert_eq!(
        engine.state().unwrap().context_management,
        None,
        "a lane before it"
    );
    assert_eq!(engine.checkpoints().unwrap().len(), 1);
    let cold = builder().build(engine.state().unwrap()).unwrap();
    let mut built = engine.build().unwrap();
    assert_eq!(built.previous_build, Some(PreviousBuild::NoneKept));
    built.previous_build = None;
    assert_eq!(built, cold);
    assert_eq!(
        engine.keep_counts().unwrap(),
        4,
        "counts are kept from now on"
    );
    engine.push(user("u3", "and now?")).unwrap();
    engine.save().unwrap();
    let mut old =
        ContextEngine::open_branch(Arc::clone(&store), "fixture", "old", builder()).unwrap();
    assert_eq!(ids(&mut old), ["u1", "a1"]);
    // The migrated nodes are linked: a chunk is found on its branch by id.
    engine.rewind("a2", Some("retry")).unwrap();
    assert_eq!(ids(&mut engine), ["u1", "a1", "u2"]);
}

#[test]
fn an_empty_chat_id_is_refused_and_nothing_is_created() {
    for backend in backends() {
        let error = ContextEngine::open(Arc::clone(&backend.store), "", builder()).unwrap_err();
        assert!(
            matches!(error.kind(), ErrorKind::Chat { .. }),
            "{}: {error}",
            backend.name
        );
        assert!(
            error.to_string().contains("a chat id cannot be empty"),
            "{}: {error}",
            backend.name
        );
        assert!(backend.store.open_chat("").is_err(), "{}", backend.name);
        assert!(
            ContextEngine::open_branch(Arc::clone(&backend.store), "", MAIN_BRANCH, builder())
                .is_err(),
            "{}",
            backend.name
        );
        assert!(
            backend.store.chats().unwrap().is_empty(),
            "{}",
            backend.name
        );
    }
}

/// A path that cannot hold a store file is refused before SQLite opens it,
/// and nothing is created beside it (SQLite would write a journal there).
#[test]
fn a_path_that_is_no_regular_file_is_refused_and_nothing_is_created() {
    let dir = TempDir::new("store");
    let listing = || {
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let folder = dir.join("folder");
    std::fs::create_dir(&folder).unwrap();
    let error = SqliteStore::open(&folder).unwrap_err();
    assert_not_a_store(&error, "it is a directory, not a SQLite file");
    assert!(
        error.to_string().contains("folder/agent-context.db"),
        "{error}"
    );
    let error = SqliteStore::open("").unwrap_err();
    assert_not_a_store(&error, "the path is empty");
    for create in [false, true] {
        let error = store::open("", create).unwrap_err();
        assert_not_a_store(&error, "the path is empty");
        let error = store::open(&folder.display().to_string(), create).unwrap_err();
        assert_not_a_store(&error, "it is a directory");
    }
    #[cfg(unix)]
    {
        let fifo = dir.join("pipe");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let error = SqliteStore::open(&fifo).unwrap_err();
        assert_not_a_store(&error, "it is not a regular file (a FIFO)");
        let error = store::open(&fifo.display().to_string(), true).unwrap_err();
        assert_not_a_store(&error, "(a FIFO)");
        let error = SqliteStore::open("/dev/null").unwrap_err();
        assert_not_a_store(&error, "it is not a regular file (a character device)");
    }
    assert_eq!(std::fs::read_dir(&folder).unwrap().count(), 0);
    #[cfg(unix)]
    assert_eq!(listing(), ["folder", "pipe"]);
    #[cfg(not(unix))]
    assert_eq!(listing(), ["folder"]);
}

/// Asserts `error` is [`ErrorKind::NotAStore`] and its message `says` why.
fn assert_not_a_store(error: &agent_context::Error, says: &str) {
    assert!(
        matches!(error.kind(), ErrorKind::NotAStore { .. }),
        "{error}"
    );
    assert!(error.to_string().contains(says), "{error}");
}

/// A store written by a later version is refused, and so is a SQLite file
/// that is no store; neither is changed.
#[test]
fn a_newer_store_or_another_database_is_refused() {
    let dir = TempDir::new("store");
    let newer = dir.join("newer.db");
    drop(SqliteStore::open(&newer).unwrap());
    let connection = rusqlite::Connection::open(&newer).unwrap();
    connection
        .execute("UPDATE schema_version SET version = 99", [])
        .unwrap();
    let error = SqliteStore::open(&newer).unwrap_err();
    assert_not_a_store(&error, "schema version 99");
    assert!(error.to_string().contains("upgrade"), "{error}");
    let other = dir.join("other.db");
    rusqlite::Connection::open(&other)
        .unwrap()
        .execute("CREATE TABLE notes (text TEXT)", [])
        .unwrap();
    let error = SqliteStore::open(&other).unwrap_err();
    assert_not_a_store(&error, "not an agent-context store");
    let garbage = dir.join("garbage.db");
    let bytes = "this is not a database, just text that is long enough ".repeat(20);
    std::fs::write(&garbage, &bytes).unwrap();
    let error = SqliteStore::open(&garbage).unwrap_err();
    assert_not_a_store(&error, "not a SQLite database");
    assert_eq!(std::fs::read_to_string(&garbage).unwrap(), bytes);
    // A chunk written by a later codec is refused by name.
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.join("codec.db")).unwrap());
    let mut engine = open(&store, "chat");
    engine.push(user("u1", "hi")).unwrap();
    engine.save().unwrap();
    rusqlite::Connection::open(dir.join("codec.db"))
        .unwrap()
        .execute("UPDATE nodes SET codec = 7", [])
        .unwrap();
    let mut engine = ContextEngine::open(store, "chat", builder()).unwrap();
    let error = engine.state().unwrap_err().to_string();
    assert!(error.contains("chunk codec 7"), "{error}");
}

const V1_FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/store-v1.db");

/// Writes `tests/fixtures/store-v1.db` in the layout of schema version 1,
/// as that version's migration created it: run with `--ignored` only to
/// make the fixture again. One chat, four chunks, a second branch at the
/// second chunk and a checkpoint.
#[test]
#[ignore = "writes the committed fixture"]
fn write_the_v1_fixture() {
    let _ = std::fs::remove_file(V1_FIXTURE);
    let db = rusqlite::Connection::open(V1_FIXTURE).unwrap();
    db.execute_batch(
        "CREATE TABLE schema_version (version INTEGER NOT NULL);
         INSERT INTO schema_version (version) VALUES (1);
         CREATE TABLE chats (id TEXT PRIMARY KEY, metadata TEXT NOT NULL DEFAULT '{}',
             system TEXT, active_branch TEXT NOT NULL, created_at INTEGER NOT NULL,
             updated_at INTEGER NOT NULL);
         CREATE TABLE nodes (id INTEGER PRIMARY KEY AUTOINCREMENT,
             chat TEXT NOT NULL REFERENCES chats (id), parent INTEGER REFERENCES nodes (id),
             position INTEGER NOT NULL, chunk_id TEXT NOT NULL, codec INTEGER NOT NULL,
             body TEXT NOT NULL);
         CREATE INDEX nodes_by_parent ON nodes (chat, parent);
         CREATE TABLE branches (chat TEXT NOT NULL REFERENCES chats (id), name TEXT NOT NULL,
             head INTEGER REFERENCES nodes (id), PRIMARY KEY (chat, name));
         CREATE TABLE checkpoints (chat TEXT NOT NULL REFERENCES chats (id), name TEXT NOT NULL,
             node INTEGER REFERENCES nodes (id), PRIMARY KEY (chat, name));
         INSERT INTO chats VALUES ('fixture', '{}', '{\"system_prompt\":\"You are terse.\",\"chunks\":[]}',
             'main', 1795400000000, 1795400000000);
         INSERT INTO nodes VALUES
             (1, 'fixture', NULL, 0, 'u1', 1, '{\"id\":\"u1\",\"kind\":\"agent\",\"role\":\"user\",\"text\":\"Fix the test.\"}'),
             (2, 'fixture', 1, 1, 'a1', 1, '{\"id\":\"a1\",\"kind\":\"agent\",\"role\":\"assistant\",\"text\":\"Reading it.\"}'),
             (3, 'fixture', 2, 2, 'u2', 1, '{\"id\":\"u2\",\"kind\":\"agent\",\"role\":\"user\",\"text\":\"Go on.\"}'),
             (4, 'fixture', 3, 3, 'a2', 1, '{\"id\":\"a2\",\"kind\":\"agent\",\"role\":\"assistant\",\"text\":\"Fixed.\"}');
         INSERT INTO branches VALUES ('fixture', 'main', 4), ('fixture', 'old', 2);
         INSERT INTO checkpoints VALUES ('fixture', 'done', 4);",
    )
    .unwrap();
}

/// Found in review: counts kept while a replacement is pending belong to
/// the replacement, not to the stored node; a chunk whose JSON reads back
/// differently is refused with nothing written; opening a branch of a
/// missing chat creates nothing; another database is left as it was.
#[test]
fn review_regressions() {
    for backend in backends() {
        let mut engine = open(&backend.store, "chat");
        engine
            .extend([user("u1", "question"), assistant("a1", "short")])
            .unwrap();
        engine.save().unwrap();
        let mut other = builder();
        other.model("gpt-4");
        let mut engine = ContextEngine::open(backend.reopen(), "chat", other.clone()).unwrap();
        engine
            .replace_last_assistant(assistant("a1", &"a much longer answer ".repeat(40)))
            .unwrap();
        engine.keep_counts().unwrap();
        engine.reload().unwrap();
        let mut fresh = ContextEngine::open(backend.reopen(), "chat", other.clone()).unwrap();
        let mut built = fresh.build().unwrap();
        built.previous_build = None;
        assert_eq!(
            built,
            other.build(fresh.state().unwrap()).unwrap(),
            "{}",
            backend.name
        );

        let mut nulled = MemoryChunk::new("n1", agent_context::ChunkKind::Thinking);
        nulled.data = Some(serde_json::Value::Null.into());
        fresh.push(nulled).unwrap();
        let error = fresh.save().unwrap_err();
        assert!(matches!(error.kind(), ErrorKind::Chunk { .. }), "{error}");
        assert_eq!(ids(&mut open(&backend.reopen(), "chat")), ["u1", "a1"]);

        let missing = ContextEngine::open_branch(backend.reopen(), "new", "feature", builder());
        assert!(matches!(
            missing.unwrap_err().kind(),
            ErrorKind::Chat { .. }
        ));
        assert!(backend.reopen().chat("new").unwrap().is_none());
    }
    let dir = TempDir::new("store");
    let other = dir.join("other.db");
    rusqlite::Connection::open(&other)
        .unwrap()
        .execute("CREATE TABLE notes (text TEXT)", [])
        .unwrap();
    assert!(SqliteStore::open(&other).is_err());
    let mode: String = rusqlite::Connection::open(&other)
        .unwrap()
        .query_row("PRAGMA journal_mode", [], |row| row.get(0))
        .unwrap();
    assert_eq!(mode, "delete", "the refused file keeps its journal mode");
}

/// A PostgreSQL schema written by a later version is refused, and so is a
/// schema holding other tables; neither is changed. Two processes' worth
/// of stores opening one new schema at once both find it created once.
#[cfg(feature = "postgres")]
#[test]
fn a_newer_postgres_store_or_another_schema_is_refused() {
    use agent_context::store::PostgresStore;
    let newer = common::postgres::Schema::new("newer");
    drop(PostgresStore::open(newer.url()).unwrap());
    newer
        .client()
        .batch_execute("UPDATE schema_version SET version = 99")
        .unwrap();
    let error = PostgresStore::open(newer.url()).unwrap_err().to_string();
    assert!(
        error.contains("schema version 99") && error.contains("upgrade"),
        "{error}"
    );
    let other = common::postgres::Schema::new("other");
    let mut client = other.client();
    let name = other.url().rsplit_once("schema=").unwrap().1.to_owned();
    client
        .batch_execute(&format!(
            "CREATE SCHEMA {name}; CREATE TABLE {name}.notes (text TEXT)"
        ))
        .unwrap();
    let error = PostgresStore::open(other.url()).unwrap_err();
    assert_not_a_store(&error, "no agent-context store");
    let tables = client
        .query(
            "SELECT table_name::text FROM information_schema.tables WHERE table_schema = $1",
            &[&name],
        )
        .unwrap();
    assert_eq!(tables.len(), 1, "the refused schema is untouched");

    let racing = common::postgres::Schema::new("racing");
    let openers: Vec<_> = (0..4)
        .map(|_| {
            let url = racing.url().to_owned();
            std::thread::spawn(move || PostgresStore::open(&url).map(|_| ()))
        })
        .collect();
    for opener in openers {
        opener.join().unwrap().unwrap();
    }
    let versions = racing
        .client()
        .query("SELECT version FROM schema_version", &[])
        .unwrap();
    assert_eq!(versions.len(), 1, "created once");
}

/// A PostgreSQL writer waits for another's lock on its chat only as long
/// as `lock_timeout` (30 s unless the URL says), then fails with the
/// reason and writes nothing.
#[cfg(feature = "postgres")]
#[test]
fn a_postgres_writer_waits_for_a_held_chat_only_so_long() {
    use agent_context::store::PostgresStore;
    let schema = common::postgres::Schema::new("lock_wait");
    let url = format!("{}&options=-c%20lock_timeout%3D300ms", schema.url());
    let store: Arc<dyn Store> = Arc::new(PostgresStore::open(&url).unwrap());
    let mut engine = open(&store, "chat");
    let mut client = schema.client();
    let mut holder = client.transaction().unwrap();
    holder
        .execute(
            "SELECT 1 FROM chats WHERE id = $1 FOR UPDATE",
            &[&b"chat".as_slice()],
        )
        .unwrap();
    engine.push(user("u1", "waits")).unwrap();
    let started = std::time::Instant::now();
    let error = engine.save().unwrap_err().to_string();
    assert!(error.contains("retry"), "{error}");
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    holder.rollback().unwrap();
    engine.save().unwrap();
    assert_eq!(
        ids(&mut open(&store::open(&url, false).unwrap(), "chat")),
        ["u1"]
    );
}

/// A schema named by a keyword is a name like any other.
#[cfg(feature = "postgres")]
#[test]
fn a_postgres_schema_named_by_a_keyword_works() {
    let url = format!("{}?schema=select", common::postgres::server_url());
    let mut engine = open(&store::open(&url, true).unwrap(), "chat");
    engine.push(user("u1", "hi")).unwrap();
    engine.save().unwrap();
    let stored = ids(&mut open(&store::open(&url, false).unwrap(), "chat"));
    let mut client =
        ::postgres::Client::connect(&common::postgres::server_url(), ::postgres::NoTls).unwrap();
    client
        .batch_execute("DROP SCHEMA \"select\" CASCADE")
        .unwrap();
    assert_eq!(stored, ["u1"]);
}
