//! Incremental sessions: every build equals a cold build of the same state
//! with the same previous build, while rendering only what changed.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::common::*;
use agent_context::budget::Policy;
use agent_context::render::{ChunkRenderer, RenderContext};
use agent_context::{
    BuildCache, BuildResult, ChunkKind, ContextBuilder, ContextSession, MemoryChunk, MemoryState,
    Role,
};
use proptest::prelude::*;

/// The cold build of `state` by `builder`, its policy included.
fn cold(
    builder: &ContextBuilder,
    state: &MemoryState,
    previous: Option<&BuildResult>,
) -> agent_context::Result<BuildResult> {
    let mut cold = builder.clone();
    if let Some(previous) = previous {
        cold.previous(previous);
    }
    cold.build(state)
}

proptest! {
    #![proptest_config(proptest_config())]

    #[test]
    fn a_session_build_is_byte_identical_to_a_cold_build(
        state in session(30),
        turn_sizes in prop::collection::vec(1usize..6, 1..12),
        max_tokens in 300usize..3000,
        cap in 24usize..200,
        edit in any::<bool>(),
        custom in any::<bool>(),
    ) {
        let mut builder = ContextBuilder::new();
        builder.max_tokens(max_tokens);
        builder.policy_mut().caps.set_kind(ChunkKind::Environment, Some(cap));
        if custom {
            // Its results are capped by their tag, not their kind.
            builder.register_renderer(Arc::new(OutputRenderer { generation: None }));
            builder.policy_mut().caps.set_tag("output", Some(cap));
        }
        let mut session = ContextSession::new(builder.clone(), MemoryState::new()).unwrap();
        let mut previous: Option<BuildResult> = None;
        let mut chunks = state.chunks.into_iter();
        for size in turn_sizes {
            let turn: Vec<MemoryChunk> = chunks.by_ref().take(size).collect();
            let added = turn.len();
            session.extend(turn).unwrap();
            if edit && session.state().chunks.len() > 3 {
                let mut changed = session.state().chunks[1].clone();
                changed.text = Some(format!("{} (edited)", changed.text.unwrap_or_default()));
                changed.data = None;
                session.update(changed).unwrap();
                // A removal shifts every later chunk: the session's record
                // of its last cut must shift with them; and a removed chunk
                // pushed back is the chunk the last build knew.
                let third = session.state().chunks[2].id.clone();
                session.remove(&third).unwrap();
                let oldest = session.state().chunks[0].id.clone();
                let oldest = session.remove(&oldest).unwrap();
                session.push(oldest).unwrap();
            }
            let expected = cold(&builder, session.state(), previous.as_ref());
            match (session.build(), expected) {
                (Ok(result), Ok(expected)) => {
                    prop_assert_eq!(serde_json::to_string(&result).unwrap(), serde_json::to_string(&expected).unwrap());
                    // What the JSON leaves out too: the fingerprints and
                    // counts the next build starts from.
                    prop_assert_eq!(&result, &expected);
                    assert_within_budget(&result);
                    // New, edited and re-added chunks, and those whose
                    // text a build let go wrongly foreseeing their cut.
                    let stats = session.stats();
                    let rendered = stats.chunks_rendered - stats.chunks_restored;
                    prop_assert!(rendered <= added + 2 * usize::from(edit), "{rendered} rendered for {added} new and an edit");
                    previous = Some(result);
                }
                (Err(got), Err(expected)) => {
                    prop_assert_eq!(got.to_string(), expected.to_string());
                    break;
                }
                (got, expected) => prop_assert!(false, "session {got:?} vs cold {expected:?}"),
            }
        }
    }
}

proptest! {
    #![proptest_config(proptest_config())]

    /// Turns that only append: extended, planned again over the last
    /// prompt, or built in full, every build equals the cold one, failures
    /// included.
    #[test]
    fn appending_turns_build_as_cold_builds_whatever_the_settings(
        state in session(60),
        turn_sizes in prop::collection::vec(1usize..8, 4..20),
        max_tokens in 200usize..2500,
        low_water in 0.5f64..=1.0,
        recent_turns in 0usize..4,
        thinking_priority in prop::option::of(0i64..100),
        user_first in any::<bool>(),
        no_framing in any::<bool>(),
        left_out in prop::sample::subsequence(
            vec![ChunkKind::Thinking, ChunkKind::Environment, ChunkKind::Workflow, ChunkKind::Delegation],
            0..3,
        ),
        estimated in any::<bool>(),
        edits in prop::option::of((0u64..4, 0u64..3, any::<bool>(), any::<bool>())),
        custom in any::<bool>(),
    ) {
        let mut builder = ContextBuilder::new();
        builder.max_tokens(max_tokens).user_first(user_first);
        if no_framing {
            builder.framing(agent_context::tokens::Framing::None);
        }
        if estimated {
            builder.model("claude-sonnet-4");
        }
        builder.exclude_kinds(left_out);
        if custom {
            builder.register_renderer(Arc::new(OutputRenderer { generation: None }));
        }
        let policy = builder.policy_mut();
        policy.low_water = low_water;
        policy.recent_turns = recent_turns;
        if let Some(priority) = thinking_priority {
            policy.set_priority(ChunkKind::Thinking, priority);
        }
        // A lone `clear_tool_uses` edit is carried on by extensions; with
        // `clear_thinking` beside it, every turn runs the full pipeline.
        if let Some((uses, keep, inputs, thinking)) = edits {
            let clear = serde_json::json!({"type": "clear_tool_uses_20250919",
                "trigger": {"type": "tool_uses", "value": uses},
                "keep": {"type": "tool_uses", "value": keep}, "clear_tool_inputs": inputs});
            let edits = match thinking {
                true => serde_json::json!([{"type": "clear_thinking_20251015"}, clear]),
                false => serde_json::json!([clear]),
            };
            policy.context_management =
                Some(serde_json::from_value(serde_json::json!({"edits": edits})).unwrap());
        }
        let mut chunks = state.chunks.into_iter();
        let turns = turn_sizes.into_iter().map(|size| chunks.by_ref().take(size).collect());
        turns_build_as_cold(&builder, turns)?;
    }
}

proptest! {
    #![proptest_config(proptest_config())]

    /// Tool loops under a lone `clear_tool_uses` edit, which extensions
    /// carry on (uses cleared in place, as they arrive, behind a budget
    /// stub or a drop): every build equals the cold one, failures included.
    #[test]
    fn tool_loops_under_a_lone_clear_tool_uses_edit_build_as_cold_builds(
        steps in prop::collection::vec((0u8..5, 1usize..4, 1usize..160), 6..40),
        turn_sizes in prop::collection::vec(1usize..4, 40),
        max_tokens in 400usize..6000,
        keep in 0u64..4,
        trigger in prop_oneof![
            (0u64..4).prop_map(|value| serde_json::json!({"type": "tool_uses", "value": value})),
            (0u64..3000).prop_map(|value| serde_json::json!({"type": "input_tokens", "value": value})),
        ],
        at_least in prop::option::of(0u64..400),
        inputs in prop_oneof![Just(serde_json::json!(false)), Just(serde_json::json!(true)),
            Just(serde_json::json!(["bash"]))],
        exclude in any::<bool>(),
        recent_turns in 0usize..3,
        compact_at in prop::option::of(0.3f64..1.5),
    ) {
        let mut edit = serde_json::json!({"type": "clear_tool_uses_20250919", "trigger": trigger,
            "keep": {"type": "tool_uses", "value": keep}, "clear_tool_inputs": inputs});
        if let Some(value) = at_least {
            edit["clear_at_least"] = serde_json::json!({"type": "input_tokens", "value": value});
        }
        if exclude {
            edit["exclude_tools"] = serde_json::json!(["grep"]);
        }
        let mut builder = ContextBuilder::new();
        builder.max_tokens(max_tokens);
        let policy = builder.policy_mut();
        policy.recent_turns = recent_turns;
        // A compaction trigger has every build say whether compaction is
        // due, from the tokens before trimming.
        policy.compact_at = compact_at.map(agent_context::budget::CompactAt::Fraction);
        policy.context_management =
            Some(serde_json::from_value(serde_json::json!({"edits": [edit]})).unwrap());
        let mut steps = tool_loop(&steps).into_iter();
        let turns = turn_sizes.into_iter().map_while(|size| {
            let turn: Vec<serde_json::Value> = steps.by_ref().take(size).flatten().collect();
            let state = MemoryState::from_json_value(serde_json::json!({ "chunks": turn })).unwrap();
            (!state.chunks.is_empty()).then_some(state.chunks)
        });
        turns_build_as_cold(&builder, turns)?;
    }
}

/// Pushes each of `turns` to a session built with `builder` and checks
/// every build against the cold one given the same previous build,
/// failures included.
fn turns_build_as_cold(
    builder: &ContextBuilder,
    turns: impl Iterator<Item = Vec<MemoryChunk>>,
) -> Result<(), TestCaseError> {
    let mut session = ContextSession::new(builder.clone(), MemoryState::new()).unwrap();
    let mut previous: Option<BuildResult> = None;
    for turn in turns {
        session.extend(turn).unwrap();
        let expected = cold(builder, session.state(), previous.as_ref());
        match (session.build(), expected) {
            (Ok(result), Ok(expected)) => {
                prop_assert_eq!(&result, &expected);
                previous = Some(result);
            }
            (Err(got), Err(expected)) => {
                prop_assert_eq!(got.to_string(), expected.to_string());
                break;
            }
            (got, expected) => prop_assert!(false, "session {got:?} vs cold {expected:?}"),
        }
    }
    Ok(())
}

/// The chunks of each step of a tool loop, from `(kind, calls, words)`: a
/// user message, parallel calls with their results (the tools alternate
/// between `bash` and `grep`), a thought, one call and its result, or one
/// call and its pinned result.
fn tool_loop(steps: &[(u8, usize, usize)]) -> Vec<Vec<serde_json::Value>> {
    let tools = ["bash", "grep"];
    steps
        .iter()
        .enumerate()
        .map(|(n, &(kind, calls, words))| match kind {
            0 => vec![user(&format!("u{n}"), words)],
            2 => vec![serde_json::json!({"id": format!("t{n}"), "kind": "thinking",
                "text": "hmm ".repeat(words)})],
            _ => {
                let calls = if kind == 1 { calls } else { 1 };
                let ids: Vec<String> = (0..calls).map(|c| format!("k{n}-{c}")).collect();
                let call = |c: usize| serde_json::json!({"id": format!("w{n}-{c}"), "kind": "workflow",
                    "action": "tool_call", "tool": tools[c % 2], "call_id": ids[c], "data": {"n": n}});
                let result = |c: usize| serde_json::json!({"id": format!("r{n}-{c}"),
                    "kind": "environment", "tool": tools[c % 2], "call_id": ids[c],
                    "text": "out ".repeat(words * (c + 1)), "pinned": kind == 4});
                (0..calls).map(call).chain((0..calls).map(result)).collect()
            }
        })
        .collect()
}

#[test]
fn an_unchanged_session_renders_nothing_and_keeps_its_prefix() {
    let mut builder = ContextBuilder::new();
    builder.max_tokens(2_000);
    let mut session = ContextSession::new(builder, MemoryState::new()).unwrap();
    session
        .push(MemoryChunk::agent("u1", Role::User, "hello"))
        .unwrap();
    let first = session.build().unwrap();
    assert_eq!(session.stats().chunks_rendered, 1);
    let second = session.build().unwrap();
    assert_eq!(
        (
            session.stats().chunks_rendered,
            session.stats().chunks_cached
        ),
        (0, 1)
    );
    assert_eq!(second.messages, first.messages);
    assert_eq!(
        second.stable_prefix_tokens,
        Some(first.messages.iter().map(|m| m.tokens).sum())
    );
    // A cap that does not cut a chunk keeps its rendering; one that cuts it
    // renders it again.
    let mut policy = Policy::default();
    policy.caps.set_kind(ChunkKind::Agent, Some(100));
    session.build_with(&policy).unwrap();
    assert_eq!(session.stats().chunks_rendered, 0);
    session
        .update(MemoryChunk::agent("u1", Role::User, "hello ".repeat(500)))
        .unwrap();
    session.build().unwrap();
    assert_eq!(session.stats().chunks_rendered, 1);
    let capped = session.build_with(&policy).unwrap();
    assert_eq!(session.stats().chunks_rendered, 1);
    assert_eq!(capped.truncated().count(), 1);
}

#[test]
fn a_cap_set_on_the_builder_is_honoured_by_the_session_as_by_a_cold_build() {
    let mut state = MemoryState::new();
    state
        .chunks
        .push(MemoryChunk::agent("u1", Role::User, "List the files."));
    let mut call = MemoryChunk::new("c1", ChunkKind::Workflow);
    call.call_id = Some("k1".into());
    call.tool = Some("ls".into());
    state.chunks.push(call);
    let mut listing = MemoryChunk::new("r1", ChunkKind::Environment);
    listing.call_id = Some("k1".into());
    listing.text = Some((0..400).map(|i| format!("file_{i}.rs\n")).collect());
    state.chunks.push(listing);
    let mut builder = ContextBuilder::new();
    builder.max_tokens(100_000);
    builder.policy_mut().caps.set_tag("tool_result", Some(120));
    let expected = builder.build(&state).unwrap();
    assert_eq!(expected.truncated().count(), 1, "the cold build cuts r1");
    assert!(cuts(&expected)[0].tokens_after <= 120);

    let mut session = ContextSession::new(builder.clone(), MemoryState::new()).unwrap();
    session.extend(state.chunks.clone()).unwrap();
    let result = session.build().unwrap();
    assert_eq!(
        serde_json::to_string(&result).unwrap(),
        serde_json::to_string(&expected).unwrap()
    );
    // A turn may pass its own policy; the next turn is back to the builder's.
    let uncapped = session.build_with(&Policy::default()).unwrap();
    assert!(uncapped.truncated().next().is_none());
    session.policy_mut().caps.set_tag("tool_result", Some(200));
    let wider = session.build().unwrap();
    assert!(cuts(&wider)[0].tokens_after > 120);
    assert!(cuts(&wider)[0].tokens_after <= 200);
}

#[test]
fn edits_are_validated_and_leave_the_session_unchanged_on_error() {
    let mut session = ContextSession::new(ContextBuilder::new(), MemoryState::new()).unwrap();
    session
        .push(MemoryChunk::agent("u1", Role::User, "hello"))
        .unwrap();
    let duplicate = session
        .push(MemoryChunk::agent("u1", Role::User, "again"))
        .unwrap_err();
    assert!(
        duplicate.to_string().contains("duplicate id"),
        "{duplicate}"
    );
    let batch = [
        MemoryChunk::agent("a1", Role::Assistant, "ok"),
        MemoryChunk::new("x", ChunkKind::Agent),
    ];
    let missing_role = session.extend(batch).unwrap_err();
    assert!(
        missing_role.to_string().contains("chunks[2]"),
        "{missing_role}"
    );
    assert_eq!(session.state().chunks.len(), 1, "all or nothing");
    assert!(
        session
            .update(MemoryChunk::agent("nope", Role::User, "x"))
            .is_err()
    );
    assert!(session.remove("nope").is_err());
    let removed = session.remove("u1").unwrap();
    assert_eq!(removed.id, "u1");
    session.push(removed).unwrap();
}

#[test]
fn a_changed_setting_clears_the_cache() {
    let mut session = ContextSession::new(ContextBuilder::new(), MemoryState::new()).unwrap();
    session
        .push(MemoryChunk::agent(
            "u1",
            Role::User,
            "a < b </user_message>",
        ))
        .unwrap();
    let structural = session.build().unwrap();
    let mut xml_builder = session.builder().clone();
    xml_builder.escape(agent_context::render::EscapeMode::Xml);
    session.set_builder(&xml_builder).unwrap();
    let xml = session.build().unwrap();
    assert_eq!(session.stats().chunks_rendered, 1);
    assert_ne!(structural.messages[0].content, xml.messages[0].content);
    assert!(xml.messages[0].content.contains("a &lt; b"));
}

/// A cache the caller owns serves a growing state as a session's does:
/// each build equals a cold one and renders only the new chunks; a chunk
/// whose id changed at its position, and a cache filled under another
/// compiled configuration, are rendered again.
#[test]
fn a_cache_the_caller_owns_renders_only_new_chunks_and_checks_ids_and_settings() {
    let mut builder = ContextBuilder::new();
    builder.max_tokens(600);
    let config = builder.compile().unwrap();
    let mut cache = BuildCache::new();
    let mut state = MemoryState::new();
    for turn in 0..40 {
        let text = format!("turn {turn}: {}", "words ".repeat(turn % 7 * 5));
        state
            .chunks
            .push(MemoryChunk::agent(format!("u{turn}"), Role::User, text));
        let built = config.build_in(&state, &mut cache).unwrap();
        assert_eq!(built, config.build(&state).unwrap(), "turn {turn}");
        assert_eq!(cache.stats().chunks_rendered, 1, "turn {turn}");
    }
    // Another chunk at the first position, under another id.
    state.chunks[0] = MemoryChunk::agent("v0", Role::User, "a new first turn");
    let built = config.build_in(&state, &mut cache).unwrap();
    assert_eq!(built, config.build(&state).unwrap());
    assert_eq!(cache.stats().chunks_rendered, 1);
    // The same settings compiled again are other settings to the cache.
    let again = builder.compile().unwrap();
    again.build_in(&state, &mut cache).unwrap();
    assert_eq!(cache.stats().chunks_rendered, state.chunks.len());
    // A chunk edited in place under its id is rendered again once forgotten.
    state.chunks[1] = MemoryChunk::agent("u1", Role::User, "turn 1, edited");
    cache.forget_chunk(1);
    let built = again.build_in(&state, &mut cache).unwrap();
    assert_eq!(built, again.build(&state).unwrap());
    assert_eq!(cache.stats().chunks_rendered, 1);
}

#[test]
fn a_message_that_grows_keeps_its_old_tokens_in_the_stable_prefix() {
    use agent_context::tokens::{Encoding, TiktokenCounter};
    let mut session = ContextSession::new(ContextBuilder::new(), MemoryState::new()).unwrap();
    session
        .push(MemoryChunk::agent(
            "u1",
            Role::User,
            "First question, with some detail.",
        ))
        .unwrap();
    let first = session.build().unwrap();
    session
        .push(MemoryChunk::agent("u2", Role::User, "And a follow-up."))
        .unwrap();
    let second = session.build().unwrap();
    assert_eq!(
        second.messages.len(),
        1,
        "the two user chunks share one message"
    );
    let stable = second.stable_prefix_tokens.unwrap();
    // The old content's tokens, up to the closing tag it shares with the
    // follow-up, are the start of the new content's tokens.
    let counter = TiktokenCounter::new(Encoding::O200kBase).unwrap();
    let old = counter.encode(&first.messages[0].content);
    let new = counter.encode(&second.messages[0].content);
    let common = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    assert!(
        stable > 0 && stable <= common,
        "stable {stable}, common {common}"
    );
    assert!(
        common - stable <= 3,
        "stable {stable} far below the common {common}"
    );
}

struct Brief;

impl agent_context::budget::Summarizer for Brief {
    fn summarize(&self, _dropped: &[&MemoryChunk], _max_tokens: usize) -> Option<String> {
        Some("Earlier turns set up the repository.".into())
    }
}

#[test]
fn the_turns_policy_is_the_one_applied() {
    let mut builder = ContextBuilder::new();
    builder.max_tokens(400);
    let mut session = ContextSession::new(builder, MemoryState::new()).unwrap();
    for turn in 0..12 {
        session
            .push(MemoryChunk::agent(
                format!("u{turn}"),
                Role::User,
                "word ".repeat(30),
            ))
            .unwrap();
    }
    let mut policy = Policy::default();
    policy.set_summarizer(std::sync::Arc::new(Brief));
    let result = session.build_with(&policy).unwrap();
    let all: String = result.messages.iter().map(|m| m.content.as_str()).collect();
    assert!(
        all.contains("<progress_summary"),
        "the turn's summarizer was used: {all}"
    );
    assert_within_budget(&result);
}

/// Counts its calls, and writes a summary that changes with each call.
struct Counting(std::sync::atomic::AtomicUsize);

impl agent_context::budget::Summarizer for Counting {
    fn summarize(&self, dropped: &[&MemoryChunk], max_tokens: usize) -> Option<String> {
        let call = self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        assert!(max_tokens > 0);
        Some(format!("Summary {call} of {} chunks.", dropped.len()))
    }
}

#[test]
fn a_summary_is_reused_while_the_cut_holds() {
    let mut builder = ContextBuilder::new();
    builder.max_tokens(600);
    let mut session = ContextSession::new(builder, MemoryState::new()).unwrap();
    let counting = std::sync::Arc::new(Counting(Default::default()));
    let mut policy = Policy::default();
    policy.set_summarizer(counting.clone());
    for turn in 0..30 {
        session
            .push(MemoryChunk::agent(
                format!("u{turn}"),
                Role::User,
                "word ".repeat(30),
            ))
            .unwrap();
    }
    let first = session.build_with(&policy).unwrap();
    assert_eq!(counting.0.load(std::sync::atomic::Ordering::SeqCst), 1);
    session
        .push(MemoryChunk::agent("a", Role::Assistant, "ok"))
        .unwrap();
    let second = session.build_with(&policy).unwrap();
    assert_eq!(
        counting.0.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "same cut, same summary"
    );
    assert_eq!(ids(first.excluded()), ids(second.excluded()));
    let stable = first.messages.take(first.messages.len() - 1);
    assert!(
        second.messages.starts_with(&stable),
        "the prefix holds the summary unchanged"
    );
}

/// A session of `turns` user turns of ~150 tokens each.
fn long_session(builder: ContextBuilder, turns: usize) -> ContextSession {
    let mut session = ContextSession::new(builder, MemoryState::new()).unwrap();
    for turn in 0..turns {
        let text = format!("turn {turn}: {}", "word ".repeat(150));
        session
            .push(MemoryChunk::agent(format!("u{turn}"), Role::User, text))
            .unwrap();
        session
            .push(MemoryChunk::agent(
                format!("a{turn}"),
                Role::Assistant,
                "ok",
            ))
            .unwrap();
    }
    session
}

#[test]
fn chunks_behind_the_cut_that_come_back_are_rendered_again() {
    let mut builder = ContextBuilder::new();
    builder.max_tokens(1_000);
    let mut session = long_session(builder.clone(), 30);
    let first = session.build().unwrap();
    let cut = first.excluded().count();
    assert!(cut > 40, "most of the session is cut: {cut}");
    // Without the newest turns and the previous cut, older turns fit again:
    // the session kept only their counts, so it renders them again.
    for turn in 24..30 {
        session.remove(&format!("u{turn}")).unwrap();
        session.remove(&format!("a{turn}")).unwrap();
    }
    session.forget_previous();
    let again = session.build().unwrap();
    let expected = cold(&builder, session.state(), None).unwrap();
    assert_eq!(
        serde_json::to_string(&again).unwrap(),
        serde_json::to_string(&expected).unwrap()
    );
    let came_back = first
        .excluded()
        .filter(|id| again.included().any(|i| i == *id))
        .count();
    assert!(came_back > 0, "no chunk came back");
    assert_eq!(session.stats().chunks_rendered, came_back);
    assert_eq!(session.stats().chunks_restored, came_back);
}

#[test]
fn parts_that_do_not_start_cleanly_keep_sessions_exact() {
    // A renderer whose output starts with a space makes the planner count
    // joined text, so every chunk it may keep needs its text.
    let mut builder = ContextBuilder::new();
    builder.max_tokens(1_000);
    builder.renderers_mut().register_fn(
        &[],
        Role::Assistant,
        |chunk| chunk.role == Some(Role::Assistant),
        |chunk, _, out| {
            out.push_str("  said: ");
            out.push_str(chunk.text.as_deref().unwrap_or_default());
        },
    );
    let mut session = long_session(builder.clone(), 30);
    let mut previous = None;
    for turn in 30..34 {
        let result = session.build().unwrap();
        let expected = cold(&builder, session.state(), previous.as_ref()).unwrap();
        assert_eq!(
            serde_json::to_string(&result).unwrap(),
            serde_json::to_string(&expected).unwrap()
        );
        assert_within_budget(&result);
        previous = Some(result);
        session
            .push(MemoryChunk::agent(format!("u{turn}"), Role::User, "more"))
            .unwrap();
    }
}

#[test]
fn a_build_over_budget_keeps_the_cache() {
    let mut builder = ContextBuilder::new();
    builder.max_tokens(200);
    let mut session = ContextSession::new(builder, MemoryState::new()).unwrap();
    let huge = MemoryChunk::agent("p", Role::User, "word ".repeat(400)).pinned();
    session.push(huge).unwrap();
    for turn in 0..5 {
        session
            .push(MemoryChunk::agent(format!("u{turn}"), Role::User, "short"))
            .unwrap();
    }
    let error = session.build().unwrap_err();
    assert!(
        matches!(
            error.kind(),
            agent_context::ErrorKind::BudgetExceeded { .. }
        ),
        "{error}"
    );
    // The failed build gave back what it borrowed: nothing is rendered again.
    session.remove("p").unwrap();
    session.build().unwrap();
    assert_eq!(session.stats().chunks_rendered, 0);
    assert_eq!(session.stats().chunks_cached, 5);
}

/// How a session built a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Path {
    /// The full pipeline.
    Full,
    /// The last build extended.
    Extended,
    /// The last prompt's chunks planned again with the new ones.
    Replanned,
    /// The cuts the plan adds made in place, found from the steps past
    /// the last cut.
    Trimmed,
}

/// Pushes each turn of `turns` (chunks as JSON) to a session built with
/// `builder`, checks every build against the cold build with the same
/// previous build, and returns how each was built.
fn turn_paths(builder: &ContextBuilder, turns: &[serde_json::Value]) -> Vec<Path> {
    turn_paths_with(builder, turns, || ())
}

/// As [`turn_paths`], calling `before_build` before each turn's build.
fn turn_paths_with(
    builder: &ContextBuilder,
    turns: &[serde_json::Value],
    mut before_build: impl FnMut(),
) -> Vec<Path> {
    let mut session = ContextSession::new(builder.clone(), MemoryState::new()).unwrap();
    let mut previous: Option<BuildResult> = None;
    let mut paths = Vec::new();
    for turn in turns {
        let chunks = MemoryState::from_json_value(serde_json::json!({ "chunks": turn })).unwrap();
        session.extend(chunks.chunks).unwrap();
        before_build();
        let result = session.build().unwrap();
        let expected = cold(builder, session.state(), previous.as_ref()).unwrap();
        assert_eq!(
            serde_json::to_string(&result).unwrap(),
            serde_json::to_string(&expected).unwrap(),
            "turn {}",
            paths.len()
        );
        assert_eq!(result, expected, "turn {}", paths.len());
        assert_within_budget(&result);
        paths.push(path_of(session.stats()));
        previous = Some(result);
    }
    paths
}

/// How a session built its last turn, by its statistics.
fn path_of(stats: agent_context::BuildStats) -> Path {
    match (stats.extended, stats.replanned, stats.trimmed) {
        (true, ..) => Path::Extended,
        (_, _, true) => Path::Trimmed,
        (_, true, _) => Path::Replanned,
        _ => Path::Full,
    }
}

/// A long tool loop at a budget it overflows every few turns, the task
/// protected at its start: each overflowing turn finds the plan's cuts
/// from the ladder's steps past the last cut and makes them in place
/// (stubs while stale results last, then drops, the marker written again
/// and moved to the first dropped chunk), and every build equals the cold
/// one with the same previous build.
#[test]
fn a_long_tool_loop_trims_in_place_as_the_plan_would() {
    let mut builder = ContextBuilder::new();
    builder.max_tokens(6_000);
    builder.policy_mut().recent_turns = 1;
    // A task, then parallel calls, single calls and thoughts, results of
    // varied sizes.
    let steps: Vec<(u8, usize, usize)> = (0..160)
        .map(|n| match n {
            0 => (0, 1, 30),
            _ if n % 5 == 0 => (2, 1, 20 + n % 40),
            _ => (1 + 2 * (n % 2) as u8, 1 + n % 3, 10 + (n * 37) % 120),
        })
        .collect();
    let mut session = ContextSession::new(builder.clone(), MemoryState::new()).unwrap();
    let mut previous: Option<BuildResult> = None;
    let (mut trims, mut replans, mut dropping_trims) = (0, 0, 0);
    for step in tool_loop(&steps) {
        let chunks = MemoryState::from_json_value(serde_json::json!({ "chunks": step }));
        session.extend(chunks.unwrap().chunks).unwrap();
        let result = session.build().unwrap();
        let expected = cold(&builder, session.state(), previous.as_ref()).unwrap();
        assert_eq!(result, expected, "step {}", trims + replans);
        assert_within_budget(&result);
        let elided = |r: Option<&BuildResult>| r.and_then(|r| r.elided).map_or(0, |e| e.chunks);
        match path_of(session.stats()) {
            Path::Trimmed => {
                trims += 1;
                dropping_trims += usize::from(elided(Some(&result)) > elided(previous.as_ref()));
            }
            Path::Replanned => replans += 1,
            _ => {}
        }
        previous = Some(result);
    }
    assert!(trims >= 20, "{trims} trims, {replans} plans");
    assert!(replans <= trims / 10, "{trims} trims, {replans} plans");
    assert!(
        dropping_trims >= 10,
        "{dropping_trims} of {trims} trims dropped"
    );
}

fn user(id: &str, words: usize) -> serde_json::Value {
    serde_json::json!({"id": id, "kind": "agent", "role": "user", "text": "ask ".repeat(words)})
}

fn call(id: &str, call_id: &str) -> serde_json::Value {
    serde_json::json!({"id": id, "kind": "workflow", "action": "tool_call", "tool": "bash",
        "call_id": call_id, "data": {"cmd": "ls"}})
}

fn result(id: &str, call_id: &str, words: usize) -> serde_json::Value {
    serde_json::json!({"id": id, "kind": "environment", "tool": "bash", "call_id": call_id,
        "text": "out ".repeat(words)})
}

/// A turn whose lowest-priority unit has its result before its call: the
/// plan drops the unit from the result, which a trim does not follow, so
/// the turn is planned again, as the cold build plans it.
#[test]
fn a_unit_whose_result_comes_first_is_planned_again_not_trimmed() {
    let mut builder = ContextBuilder::new();
    builder.max_tokens(3_000);
    builder.policy_mut().recent_turns = 0;
    let mut turns = agent_turns(8);
    // The unit of priority 1 drops first; its result has no stub.
    let lowest = |mut chunk: serde_json::Value| {
        chunk["priority"] = serde_json::json!(1);
        chunk["retention"] = serde_json::json!("compressible");
        chunk
    };
    turns.push(serde_json::json!([
        lowest(result("rx", "kx", 1500)),
        lowest(call("wx", "kx")),
        user("ux", 5),
        call("wy", "ky"),
        result("ry", "ky", 20),
    ]));
    let paths = turn_paths(&builder, &turns);
    assert_eq!(paths.last(), Some(&Path::Replanned), "{paths:?}");
}

/// `count` turns of a user message, a thought, a tool call and its
/// result, and an answer: about 250 tokens each.
fn agent_turns(count: usize) -> Vec<serde_json::Value> {
    (0..count)
        .map(|t| {
            serde_json::json!([
                user(&format!("u{t}"), 40),
                {"id": format!("t{t}"), "kind": "thinking", "text": "hmm ".repeat(80)},
                call(&format!("w{t}"), &format!("k{t}")),
                result(&format!("r{t}"), &format!("k{t}"), 60),
                {"id": format!("a{t}"), "kind": "agent", "role": "assistant", "text": "done"},
            ])
        })
        .collect()
}

#[test]
fn a_turn_that_only_appends_extends_the_last_build_or_plans_its_prompt_again() {
    let mut builder = ContextBuilder::new();
    builder.max_tokens(3_000);
    let turns = agent_turns(40);
    let paths = turn_paths(&builder, &turns);
    let (first, rest) = paths.split_first().unwrap();
    assert_eq!(*first, Path::Full, "the first build has nothing to extend");
    assert!(!rest.contains(&Path::Full), "{paths:?}");
    // Each turn adds ~250 tokens; a trim makes 20% of 3,000 tokens of
    // room, which lasts two or three turns.
    let planned = |p: &&Path| matches!(p, Path::Replanned | Path::Trimmed);
    let replanned = rest.iter().filter(planned).count();
    assert!(replanned >= 8, "the cut had to move: {paths:?}");
    assert!(replanned <= rest.len() / 2, "most turns extend: {paths:?}");
}

#[test]
fn turns_an_extension_cannot_build_are_planned_again_or_run_the_full_pipeline() {
    let builder = ContextBuilder::new();
    let system = serde_json::json!({"id": "s1", "kind": "system", "text": "repo: acme"});
    let orphan =
        serde_json::json!({"id": "o1", "kind": "environment", "call_id": "late", "text": "early"});
    let pinned_call = serde_json::json!({"id": "w2", "kind": "workflow", "action": "tool_call",
        "tool": "bash", "call_id": "k2", "pinned": true, "data": {}});
    let turns = [
        serde_json::json!([user("u1", 5), call("w1", "k1")]),
        // A result whose call an earlier build holds.
        serde_json::json!([result("r1", "k1", 5)]),
        // Extends.
        serde_json::json!([user("u2", 5)]),
        // A system chunk joins the system message.
        serde_json::json!([system]),
        // An orphan, then its call: the orphan comes back.
        serde_json::json!([orphan]),
        serde_json::json!([call("w3", "late")]),
        // A call in the same model call as w3, whose unit reaches back
        // before it (o1 answered "late" first): the newest tool use grows,
        // and the protection of its units is worked out by planning again.
        serde_json::json!([call("w4", "k4"), user("u3", 5), result("r4", "k4", 5)]),
        // The latest user message moves on alone: it extends.
        serde_json::json!([user("u4", 5)]),
        // A newer tool use lifts the protection of w3's and w4's units,
        // one of which reaches back: planned again. A pinned call's unit
        // stays protected when the newest tool use moves on.
        serde_json::json!([user("u5", 5), pinned_call, result("r2", "k2", 5)]),
        serde_json::json!([user("u6", 5)]),
    ];
    use Path::*;
    assert_eq!(
        turn_paths(&builder, &turns),
        [
            Full, Full, Extended, Full, Extended, Full, Replanned, Extended, Replanned, Extended
        ]
    );
}

#[test]
fn a_lone_clear_tool_uses_edit_is_carried_on_by_extensions() {
    let mut builder = ContextBuilder::new();
    builder.policy_mut().context_management = Some(
        serde_json::from_value(serde_json::json!({"edits": [{"type": "clear_tool_uses_20250919",
            "trigger": {"type": "tool_uses", "value": 1}, "keep": {"type": "tool_uses", "value": 2}}]}))
        .unwrap(),
    );
    let step = |n: usize| {
        [
            call(&format!("w{n}"), &format!("k{n}")),
            result(&format!("r{n}"), &format!("k{n}"), 40),
        ]
    };
    let turns = [
        serde_json::json!([user("u1", 5), step(1)[0], step(1)[1]]),
        // The edit fires but clears nothing, then clears r1.
        serde_json::json!(step(2)),
        serde_json::json!(step(3)),
        // Clears r2 in place, in a message before the last.
        serde_json::json!(step(4)),
        // Two parallel calls: r3 and r4 leave `keep`'s window, r4 from the
        // last message, which the new assistant message closes.
        serde_json::json!([step(5)[0], step(6)[0], step(5)[1], step(6)[1]]),
        // A user message joins the last message; nothing new is cleared.
        serde_json::json!([user("u2", 5)]),
        serde_json::json!(step(7)),
        // r6 is cleared while u3 joins the last message.
        serde_json::json!([user("u3", 5), step(8)[0], step(8)[1]]),
        serde_json::json!([step(9)[0], step(10)[0], step(9)[1], step(10)[1]]),
        // r9, in the last message, is cleared while u4 joins it: the full
        // pipeline builds it.
        serde_json::json!([user("u4", 5), step(11)[0], step(11)[1]]),
        serde_json::json!(step(12)),
        // Four steps at once: the first two are cleared as they arrive.
        serde_json::json!([step(13), step(14), step(15), step(16)].concat()),
    ];
    use Path::*;
    assert_eq!(
        turn_paths(&builder, &turns),
        [
            Full, Full, Full, Extended, Extended, Extended, Extended, Extended, Extended, Full,
            Extended, Extended
        ]
    );
}

#[test]
fn a_filtered_result_stays_out_of_the_unit_planned_again() {
    // The first build drops w0, whose result the filter leaves out: the
    // next turn, planned again, must not count that result as dropped.
    let mut builder = ContextBuilder::new();
    builder
        .max_tokens(328)
        .exclude_kinds([ChunkKind::Environment]);
    builder.policy_mut().low_water = 1.0;
    let assistant = |id: &str| serde_json::json!({"id": id, "kind": "agent", "role": "assistant", "text": "ok ".repeat(30)});
    let turns = [
        serde_json::json!([
            user("u0", 40),
            call("w0", "k0"),
            result("r0", "k0", 60),
            assistant("a0"),
            user("u1", 40),
            assistant("a1"),
            user("u2", 40),
            assistant("a2"),
        ]),
        serde_json::json!([assistant("a3")]),
        serde_json::json!([user("u3", 40), assistant("a4")]),
    ];
    let paths = turn_paths(&builder, &turns);
    assert!(paths[1..].contains(&Path::Replanned), "{paths:?}");
}

#[test]
fn a_new_chunk_whose_cap_is_too_small_is_named_as_the_pipeline_names_it() {
    let mut builder = ContextBuilder::new();
    builder.max_tokens(4_000);
    builder
        .policy_mut()
        .caps
        .set_kind(ChunkKind::Environment, Some(24));
    let long = |c: &str| format!("{c}{}", "x".repeat(300));
    let mut session = ContextSession::new(builder.clone(), MemoryState::new()).unwrap();
    let first =
        MemoryState::from_json_value(serde_json::json!({"chunks": [user("u0", 5)]})).unwrap();
    session.extend(first.chunks).unwrap();
    session.build().unwrap();
    let turn = serde_json::json!({"chunks": [
        call("w1", &long("a")), result("r1", &long("a"), 5),
        call("w2", &long("b")), result("r2", &long("b"), 5),
    ]});
    session
        .extend(MemoryState::from_json_value(turn).unwrap().chunks)
        .unwrap();
    let expected = cold(&builder, session.state(), None).unwrap_err();
    assert_eq!(
        session.build().unwrap_err().to_string(),
        expected.to_string()
    );
}

#[test]
fn a_turn_handed_to_the_full_pipeline_counts_each_chunk_once() {
    let mut session = ContextSession::new(ContextBuilder::new(), MemoryState::new()).unwrap();
    let first = serde_json::json!({"chunks": [user("u1", 5), call("w1", "k1")]});
    session
        .extend(MemoryState::from_json_value(first).unwrap().chunks)
        .unwrap();
    session.build().unwrap();
    // A system chunk sends the turn to the full pipeline after the new
    // user turn was rendered.
    let turn = serde_json::json!({"chunks": [user("u2", 5), {"id": "s1", "kind": "system", "text": "repo"}]});
    session
        .extend(MemoryState::from_json_value(turn).unwrap().chunks)
        .unwrap();
    session.build().unwrap();
    let stats = session.stats();
    assert_eq!((stats.extended, stats.replanned), (false, false));
    assert_eq!(
        (stats.chunks_rendered, stats.chunks_cached),
        (2, 2),
        "{stats:?}"
    );
}

#[test]
fn a_forked_session_goes_on_apart_from_its_original() {
    let mut builder = ContextBuilder::new();
    builder.max_tokens(2_000);
    let mut original = ContextSession::new(builder.clone(), MemoryState::new()).unwrap();
    let first =
        serde_json::json!({"chunks": [user("u1", 30), call("w1", "k1"), result("r1", "k1", 40)]});
    original
        .extend(MemoryState::from_json_value(first).unwrap().chunks)
        .unwrap();
    let before = original.build().unwrap();
    let mut fork = original.clone();
    fork.reserve(8);
    fork.push(MemoryChunk::agent("a1", Role::Assistant, "Fixed."))
        .unwrap();
    let forked = fork.build().unwrap();
    assert!(fork.stats().extended, "{:?}", fork.stats());
    assert_eq!(forked, cold(&builder, fork.state(), Some(&before)).unwrap());
    // The original neither sees the fork's chunk nor loses its own turn.
    assert_eq!(original.state().chunks.len(), 3);
    original
        .push(MemoryChunk::agent("a1", Role::Assistant, "Another answer."))
        .unwrap();
    let own = original.build().unwrap();
    assert_eq!(
        own,
        cold(&builder, original.state(), Some(&before)).unwrap()
    );
    assert_ne!(own.messages, forked.messages);
}

/// Draws tool results as `<output>` elements, with a stub, in a role that
/// depends on the result. With a `generation` it writes that number too,
/// which the test changes between turns, and says it is not deterministic.
struct OutputRenderer {
    generation: Option<Arc<AtomicUsize>>,
}

impl ChunkRenderer for OutputRenderer {
    fn can_render(&self, chunk: &MemoryChunk) -> bool {
        chunk.kind == ChunkKind::Environment
    }

    fn role(&self, chunk: &MemoryChunk) -> Role {
        match chunk.text.as_deref().map_or(0, str::len) % 3 {
            0 => Role::Assistant,
            _ => Role::User,
        }
    }

    fn render(&self, chunk: &MemoryChunk, ctx: &RenderContext<'_>, out: &mut String) {
        let generation = (self.generation.as_ref()).map(|g| g.load(Ordering::SeqCst).to_string());
        let attributes = [
            ("id", Some(chunk.id.as_str())),
            ("call_id", chunk.call_id.as_deref()),
            ("generation", generation.as_deref()),
        ];
        ctx.write_element(out, "output", &attributes, chunk.text.as_deref());
    }

    fn render_stub(
        &self,
        chunk: &MemoryChunk,
        elided_tokens: usize,
        ctx: &RenderContext<'_>,
        out: &mut String,
    ) -> bool {
        let elided = format!("{elided_tokens} tokens");
        let attributes = [("id", Some(chunk.id.as_str())), ("elided", Some(&*elided))];
        ctx.write_element(out, "output", &attributes, None);
        true
    }

    fn tags(&self) -> Vec<String> {
        vec!["output".into()]
    }

    fn deterministic(&self) -> bool {
        self.generation.is_none()
    }
}

/// A builder whose tool results `OutputRenderer` draws (capped by their
/// tag) and whose thoughts a closure draws.
fn custom_builder(generation: Option<Arc<AtomicUsize>>) -> ContextBuilder {
    let mut builder = ContextBuilder::new();
    builder.max_tokens(3_000);
    builder.register_renderer(Arc::new(OutputRenderer { generation }));
    builder.renderers_mut().register_fn(
        &["thought"],
        Role::Assistant,
        |chunk| chunk.kind == ChunkKind::Thinking,
        |chunk, ctx, out| ctx.write_element(out, "thought", &[], chunk.text.as_deref()),
    );
    builder.policy_mut().caps.set_tag("output", Some(60));
    builder
}

#[test]
fn deterministic_custom_renderers_keep_the_fast_path() {
    let paths = turn_paths(&custom_builder(None), &agent_turns(40));
    let (first, rest) = paths.split_first().unwrap();
    assert_eq!(*first, Path::Full, "the first build has nothing to extend");
    assert!(!rest.contains(&Path::Full), "{paths:?}");
    let extended = rest.iter().filter(|p| **p == Path::Extended).count();
    assert!(extended > rest.len() / 2, "most turns extend: {paths:?}");
    assert!(
        rest.contains(&Path::Replanned),
        "the cut had to move: {paths:?}"
    );
}

#[test]
fn a_custom_renderers_chunks_are_capped_by_its_tag_in_every_path() {
    let builder = custom_builder(None);
    let mut session = ContextSession::new(builder, MemoryState::new()).unwrap();
    for chunks in agent_turns(3) {
        let chunks = MemoryState::from_json_value(serde_json::json!({ "chunks": chunks }));
        session.extend(chunks.unwrap().chunks).unwrap();
        let result = session.build().unwrap();
        let cut: Vec<_> = result.truncated().map(|t| t.id.as_str()).collect();
        assert_eq!(cut.len(), session.state().chunks.len() / 5, "{cut:?}");
        assert!(cut.iter().all(|id| id.starts_with('r')), "{cut:?}");
    }
    assert!(session.stats().extended, "{:?}", session.stats());
}

#[test]
fn a_custom_renderer_that_is_not_deterministic_renders_again_every_build() {
    let generation = Arc::new(AtomicUsize::new(0));
    let builder = custom_builder(Some(Arc::clone(&generation)));
    let mut session = ContextSession::new(builder.clone(), MemoryState::new()).unwrap();
    let mut previous = None;
    for (turn, chunks) in agent_turns(12).into_iter().enumerate() {
        let chunks = MemoryState::from_json_value(serde_json::json!({ "chunks": chunks }));
        session.extend(chunks.unwrap().chunks).unwrap();
        // What the renderer writes changes between turns: the session
        // must not serve last turn's rendering of an old result.
        generation.store(turn, Ordering::SeqCst);
        let result = session.build().unwrap();
        let expected = cold(&builder, session.state(), previous.as_ref()).unwrap();
        assert_eq!(result, expected, "turn {turn}");
        let stats = session.stats();
        assert_eq!(
            (stats.extended, stats.replanned),
            (false, false),
            "turn {turn}"
        );
        let shown = result
            .messages
            .iter()
            .filter(|m| m.content.contains("<output"))
            .count();
        assert!(shown > 0, "turn {turn}: no result shown");
        previous = Some(result);
    }
}
