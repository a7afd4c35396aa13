//! The prompt cache's report (`cache`, [`BuildResult::cache_since`]) on
//! real builds: a session that only appends keeps the whole previous
//! prompt; a refill, a `context_management` edit, a compaction, a new
//! system prompt, an edited or removed chunk and changed settings each
//! break the prefix where the prompts first differ, with their cause, the
//! chunk that tells, and the tokens of the previous prompt lost. The CLI's
//! `--previous`, `replay` and an engine report the same.

use crate::common::cli::{Run, run};
use crate::common::temp::TempDir;
use crate::session_gen::{AgentLoop, LoopShape, agent_loop};
use agent_context::budget::{Decision, DropReason, StubReason};
use agent_context::compaction::{CompactionOptions, CompactionPlan};
use agent_context::render::EscapeMode;
use agent_context::{
    BreakCause, BuildResult, CacheBreak, CacheReport, ChunkId, ChunkKind, ContextBuilder,
    ContextEngine, ContextSession, MemoryChunk, MemoryState, Role, store,
};
use serde_json::{Value, json};

fn builder(max_tokens: usize) -> ContextBuilder {
    crate::common::gpt_4o(max_tokens, 500)
}

/// A generated agent loop of `steps` model calls, results of 40 bytes to
/// 3 KB.
fn looped(seed: u64, steps: usize) -> AgentLoop {
    let shape = LoopShape {
        result_bytes: (40, 3_000),
        ..LoopShape::new(steps)
    };
    agent_loop(seed, &shape)
}

/// The tokens of `result`'s messages: what a prompt cache could hold of it.
fn sent(result: &BuildResult) -> usize {
    result.messages.iter().map(|m| m.tokens).sum()
}

/// Whether `current`'s message `index` is `previous`'s, byte for byte,
/// with more after it.
fn grew(previous: &BuildResult, current: &BuildResult, index: usize) -> bool {
    let (Some(old), Some(new)) = (previous.messages.get(index), current.messages.get(index)) else {
        return false;
    };
    old.role == new.role
        && new.content.len() > old.content.len()
        && new.content.as_str().starts_with(old.content.as_str())
}

/// The first message where `current` differs from `previous` in role or
/// bytes, compared as text (not by the fingerprints the library keeps);
/// `None` when every previous message is there, the last one perhaps
/// grown.
fn first_difference(previous: &BuildResult, current: &BuildResult) -> Option<usize> {
    let last = previous.messages.len().checked_sub(1)?;
    (0..=last).find(|&i| {
        let same = (current.messages.get(i)).is_some_and(|m| {
            m.role == previous.messages[i].role && m.content == previous.messages[i].content
        });
        !same && (i != last || !grew(previous, current, i))
    })
}

/// The decision on chunk `id` in `result`.
fn decision(result: &BuildResult, id: &ChunkId) -> Option<Decision> {
    (result.decisions.iter())
        .find(|d| &d.id == id)
        .map(|d| d.decision)
}

/// The first chunk of `previous`'s prompt, in prompt order, whose decision
/// in `current` is one `now` accepts and was another in `previous`.
fn first_changed_to(
    previous: &BuildResult,
    current: &BuildResult,
    now: impl Fn(Decision) -> bool,
) -> Option<ChunkId> {
    previous
        .included()
        .find(|id| {
            let after = decision(current, id);
            after.is_some_and(&now) && after != decision(previous, id)
        })
        .cloned()
}

fn trimmed_for_budget(decision: Decision) -> bool {
    matches!(
        decision,
        Decision::Stubbed {
            reason: StubReason::Budget,
            ..
        } | Decision::Dropped {
            reason: DropReason::Budget
        }
    )
}

/// The report `current` carries.
fn cache(current: &BuildResult) -> &CacheReport {
    current
        .cache
        .as_ref()
        .expect("a build after the first reports `cache`")
}

/// Checks the figures any break must show, and returns it: the report is
/// `current.cache_since(previous)`, its stable prefix the build's; the
/// break is at the first message that differs as text; the stable prefix
/// is every message before it (and, when the message there grew, more);
/// the tokens lost are the previous prompt's after the stable prefix.
fn assert_break<'r>(previous: &BuildResult, current: &'r BuildResult) -> &'r CacheBreak {
    let report = cache(current);
    assert_eq!(
        report,
        &current.cache_since(previous),
        "the report is cache_since"
    );
    assert_eq!(
        Some(report.stable_prefix_tokens),
        current.stable_prefix_tokens
    );
    let broke = report.broke_at.as_ref().expect("the prefix broke");
    assert_eq!(
        Some(broke.message),
        first_difference(previous, current),
        "{broke:?}"
    );
    let before: usize = (current.messages.iter().take(broke.message))
        .map(|m| m.tokens)
        .sum();
    if grew(previous, current, broke.message) {
        assert!(report.stable_prefix_tokens > before, "{broke:?}");
    } else {
        assert_eq!(report.stable_prefix_tokens, before, "{broke:?}");
    }
    assert_eq!(
        broke.tokens_lost,
        sent(previous) - report.stable_prefix_tokens,
        "{broke:?}"
    );
    broke
}

/// The index of the message of `result` that holds chunk `id`.
fn message_of(result: &BuildResult, id: &str) -> usize {
    (result.messages.iter())
        .position(|m| m.chunk_ids.iter().any(|c| c.as_str() == id))
        .unwrap_or_else(|| panic!("{id} is in no message"))
}

/// `builder` given `previous`, building `state`: a one-shot build of the
/// session's turn.
fn one_shot(builder: &ContextBuilder, state: &MemoryState, previous: &BuildResult) -> BuildResult {
    let mut builder = builder.clone();
    builder.previous(previous);
    builder.build(state).expect("builds")
}

/// Turns that only append, with room to spare: every turn after the first
/// keeps the whole previous prompt (`broke_at` null), its stable prefix is
/// the build's `stable_prefix_tokens` and covers every previous message
/// but perhaps the last (grown), and a builder given the previous build
/// reports the same.
#[test]
fn appending_turns_keep_the_whole_previous_prompt() {
    let looped = looped(3, 40);
    let builder = builder(200_000);
    let mut session = ContextSession::new(builder.clone(), looped.opening.clone()).unwrap();
    let mut previous: Option<BuildResult> = None;
    for step in &looped.steps {
        session.extend(step.iter().cloned()).unwrap();
        let result = session.build().unwrap();
        let Some(previous) = previous.replace(result.clone()) else {
            assert_eq!(
                result.cache, None,
                "nothing to compare the first build with"
            );
            continue;
        };
        let report = cache(&result);
        assert_eq!(report.broke_at, None, "{report:?}");
        assert_eq!(
            Some(report.stable_prefix_tokens),
            result.stable_prefix_tokens
        );
        let last = previous.messages.last().map_or(0, |m| m.tokens);
        let stable = report.stable_prefix_tokens;
        assert!(
            (sent(&previous) - last..=sent(&previous)).contains(&stable),
            "{stable} of {} sent",
            sent(&previous)
        );
        assert_eq!(first_difference(&previous, &result), None);
        let cold = one_shot(&builder, session.state(), &previous);
        assert_eq!(cold.cache, result.cache);
        assert_eq!(cold.messages, result.messages);
    }
}

/// A session whose window overflows trims to the low-water mark: each
/// turn that trims breaks the prefix as `refilled`, at the message of the
/// oldest chunk the trim took that the previous prompt held, and names
/// that chunk, whether the trim stubbed it or dropped it (and put the
/// elision marker in an earlier message, which is then where the prefix
/// breaks); a builder given the previous build reports the same, and the
/// turns that do not trim keep the whole previous prompt.
#[test]
fn a_refill_is_refilled_naming_the_oldest_chunk_it_trimmed() {
    let looped = looped(11, 120);
    let builder = builder(16_000);
    let mut session = ContextSession::new(builder.clone(), looped.opening.clone()).unwrap();
    let mut previous: Option<BuildResult> = None;
    let (mut refills, mut wrong) = (0, Vec::new());
    for (step, chunks) in looped.steps.iter().enumerate() {
        session.extend(chunks.iter().cloned()).unwrap();
        let result = session.build().unwrap();
        let Some(previous) = previous.replace(result.clone()) else {
            continue;
        };
        let cold = one_shot(&builder, session.state(), &previous);
        assert_eq!(cold.cache, result.cache);
        let Some(trimmed) = first_changed_to(&previous, &result, trimmed_for_budget) else {
            assert_eq!(cache(&result).broke_at, None, "no trim, no break");
            continue;
        };
        assert!(result.trim_target.is_some(), "a trim to the low-water mark");
        let broke = assert_break(&previous, &result);
        let marker = result.elided != previous.elided;
        if marker {
            // The marker moved: it ends the message before the first
            // chunk it stands for, which is where the prompts part.
            let at = &result.messages[broke.message].content;
            assert!(
                at.as_str().contains("<elided_history"),
                "step {step}: {broke:?}"
            );
        } else {
            assert_eq!(
                broke.message,
                message_of(&previous, &trimmed),
                "step {step}"
            );
        }
        let expected = (BreakCause::Refilled, Some(&trimmed));
        if (broke.cause, broke.chunk.as_ref()) != expected {
            wrong.push(format!(
                "step {step} (marker moved: {marker}): {broke:?}, expected {expected:?}"
            ));
        }
        refills += 1;
    }
    assert!(refills >= 3, "{refills} refills");
    assert!(
        wrong.is_empty(),
        "{} of {refills} refills:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

/// A chat whose budget drops whole answers (not stubs): the refill that
/// first drops one is `refilled`, naming the oldest answer dropped. The
/// user messages around it then merge into one message, which is where
/// the prefix breaks.
#[test]
fn a_refill_that_drops_whole_messages_names_the_first_chunk_dropped() {
    let builder = builder(6_000);
    let opening = MemoryState::new().with_system_prompt("Be brief.");
    let mut session = ContextSession::new(builder, opening).unwrap();
    let mut previous: Option<BuildResult> = None;
    for n in 0..30 {
        let question = format!("question {n}: ").repeat(60);
        let answer = format!("answer {n}. ").repeat(80);
        session
            .extend([
                MemoryChunk::agent(format!("u{n}"), Role::User, question),
                MemoryChunk::agent(format!("a{n}"), Role::Assistant, answer),
            ])
            .unwrap();
        let result = session.build().unwrap();
        let Some(previous) = previous.replace(result.clone()) else {
            continue;
        };
        if cache(&result).broke_at.is_none() {
            continue;
        }
        let dropped = first_changed_to(&previous, &result, trimmed_for_budget)
            .expect("the break trimmed something");
        let broke = assert_break(&previous, &result);
        assert_eq!(
            (broke.cause, broke.chunk.as_ref()),
            (BreakCause::Refilled, Some(&dropped)),
            "turn {n}: {broke:?}"
        );
        return;
    }
    panic!("the chat never refilled");
}

fn management(edits: Value) -> Option<agent_context::budget::ContextManagement> {
    Some(serde_json::from_value(json!({ "edits": edits })).expect("valid edits"))
}

/// With room to spare, the `clear_tool_uses` edit that starts clearing
/// breaks the prefix as `context_edit`, naming the oldest chunk it
/// cleared, at that chunk's message.
#[test]
fn a_clear_tool_uses_edit_that_starts_clearing_is_a_context_edit() {
    let looped = looped(7, 30);
    let mut builder = builder(200_000);
    builder.policy_mut().context_management = management(json!([{
        "type": "clear_tool_uses_20250919",
        "trigger": {"type": "tool_uses", "value": 6},
        "keep": {"type": "tool_uses", "value": 2},
    }]));
    let cleared = |d: Decision| {
        matches!(
            d,
            Decision::Stubbed {
                reason: StubReason::ClearToolUses,
                ..
            }
        )
    };
    assert_first_edit(&builder, &looped, cleared);
}

/// With room to spare, `clear_thinking` dropping an older turn's thinking
/// breaks the prefix as `context_edit`, naming that thinking.
#[test]
fn clearing_old_thinking_is_a_context_edit() {
    let looped = looped(7, 30);
    let mut builder = builder(200_000);
    builder.policy_mut().context_management = management(json!([{
        "type": "clear_thinking_20251015",
        "keep": {"type": "thinking_turns", "value": 1},
    }]));
    let cleared = |d: Decision| {
        matches!(
            d,
            Decision::Dropped {
                reason: DropReason::ClearThinking
            }
        )
    };
    assert_first_edit(&builder, &looped, cleared);
}

/// The first break of a session of `looped` built by `builder` is a
/// `context_edit` naming the first chunk of the previous prompt `cleared`
/// accepts now, where nothing was cleared before.
fn assert_first_edit(
    builder: &ContextBuilder,
    looped: &AgentLoop,
    cleared: impl Fn(Decision) -> bool,
) {
    let mut session = ContextSession::new(builder.clone(), looped.opening.clone()).unwrap();
    let mut previous: Option<BuildResult> = None;
    for step in &looped.steps {
        session.extend(step.iter().cloned()).unwrap();
        let result = session.build().unwrap();
        let Some(previous) = previous.replace(result.clone()) else {
            continue;
        };
        if cache(&result).broke_at.is_none() {
            continue;
        }
        assert!(previous.applied_edits.is_empty(), "nothing cleared before");
        assert!(!result.applied_edits.is_empty(), "this build cleared");
        let first = first_changed_to(&previous, &result, &cleared).expect("a chunk cleared");
        let broke = assert_break(&previous, &result);
        assert_eq!(broke.cause, BreakCause::ContextEdit, "{broke:?}");
        assert_eq!(broke.chunk.as_ref(), Some(&first), "{broke:?}");
        assert_eq!(broke.message, message_of(&previous, &first));
        assert_eq!(result.elided, None, "no refill");
        return;
    }
    panic!("the edit never cleared");
}

/// A compaction planned and applied in a session breaks the next build's
/// prefix as `compaction`, at the message where its summary stands,
/// naming the first chunk of the previous prompt it folded.
#[test]
fn a_new_compaction_is_a_compaction_at_its_summary() {
    let state = looped(11, 80).state(80);
    let mut session = ContextSession::new(builder(16_000), state).unwrap();
    let previous = session.build().unwrap();
    let mut options = CompactionOptions::default();
    options.keep_tokens = Some(3_000);
    let CompactionPlan::Ready(plan) = session.plan_compaction(&options).unwrap() else {
        panic!("nothing to fold");
    };
    let applied = session
        .apply_compaction(
            &plan.plan,
            "Goal: make the tests pass. Progress: read the sources.",
        )
        .unwrap();
    let result = session.build().unwrap();
    let broke = assert_break(&previous, &result);
    assert_eq!(broke.cause, BreakCause::Compaction, "{broke:?}");
    let compacted = |d: Decision| {
        d == Decision::Dropped {
            reason: DropReason::Compacted,
        }
    };
    let first_folded = first_changed_to(&previous, &result, compacted);
    assert_eq!(broke.chunk, first_folded, "{broke:?}");
    assert_eq!(broke.message, message_of(&result, &applied.compaction));
    // And a build after it, which only appends, keeps the prefix.
    // (The generator draws step after step: 81 steps are the 80 and one more.)
    let step = looped(11, 81).steps.pop().unwrap();
    session.extend(step).unwrap();
    let next = session.build().unwrap();
    assert_eq!(cache(&next).broke_at, None, "{:?}", next.cache);
}

/// What changes a session, and the chunk the break should name.
type Change = (&'static str, fn(&mut ContextSession), Option<&'static str>);

/// A new system prompt, a new fragment, and a system chunk edited each
/// break the prefix at message 0 as `system_changed`: the whole previous
/// prompt is lost. The prompt and fragments are no chunk; the edited
/// system chunk is named.
#[test]
fn a_changed_system_message_is_system_changed_at_message_0() {
    let opening = MemoryState::new()
        .with_system_prompt("Be brief.")
        .with_chunk(MemoryChunk::new("rules", ChunkKind::System).with_text("Rule one."))
        .with_chunk(MemoryChunk::agent("u0", Role::User, "Fix the build."))
        .with_chunk(MemoryChunk::agent(
            "a0",
            Role::Assistant,
            "Reading the logs.",
        ));
    let mut session = ContextSession::new(builder(8_000), opening).unwrap();
    let mut previous = session.build().unwrap();
    let changes: [Change; 3] = [
        (
            "prompt",
            |s| s.set_system_prompt(Some("Be thorough.".into())),
            None,
        ),
        (
            "fragment",
            |s| s.set_fragments(vec![agent_context::fragment::hint("Run the tests.")]),
            None,
        ),
        (
            "system chunk",
            |s| {
                let rules = MemoryChunk::new("rules", ChunkKind::System);
                s.update(rules.with_text("Rule one, and rule two."))
                    .unwrap();
            },
            Some("rules"),
        ),
    ];
    for (what, change, chunk) in changes {
        change(&mut session);
        let result = session.build().unwrap();
        let broke = assert_break(&previous, &result);
        assert_eq!(broke.message, 0, "{what}: {broke:?}");
        assert_eq!(broke.cause, BreakCause::SystemChanged, "{what}");
        assert_eq!(broke.chunk.as_ref().map(ChunkId::as_str), chunk, "{what}");
        assert_eq!(broke.tokens_lost, sent(&previous), "{what}");
        previous = result;
    }
}

/// Six questions and answers, each its own message.
fn chat_state() -> MemoryState {
    let mut state = MemoryState::new();
    for n in 0..6 {
        state = state
            .with_chunk(MemoryChunk::agent(
                format!("u{n}"),
                Role::User,
                format!("question {n}"),
            ))
            .with_chunk(MemoryChunk::agent(
                format!("a{n}"),
                Role::Assistant,
                format!("answer {n}"),
            ));
    }
    state
}

/// A chunk edited in the middle breaks the prefix as `chunk_changed` at
/// its message, naming it: in a session (`update`), and between two
/// builder builds of states that differ in that chunk's text.
#[test]
fn an_edited_chunk_is_chunk_changed_naming_it() {
    let builder = builder(8_000);
    let mut session = ContextSession::new(builder.clone(), chat_state()).unwrap();
    let previous = session.build().unwrap();
    let edited = MemoryChunk::agent("a3", Role::Assistant, "a longer answer 3");
    session.update(edited.clone()).unwrap();
    let result = session.build().unwrap();
    let broke = assert_break(&previous, &result);
    assert_eq!(broke.cause, BreakCause::ChunkChanged);
    assert_eq!(broke.chunk.as_ref().map(ChunkId::as_str), Some("a3"));
    assert_eq!(broke.message, message_of(&previous, "a3"));

    let first = builder.build(&chat_state()).unwrap();
    let mut state = chat_state();
    let at = state.chunks.iter().position(|c| c.id == "u2").unwrap();
    state.chunks[at].text = Some("question 2, asked again at more length".into());
    let second = one_shot(&builder, &state, &first);
    let broke = assert_break(&first, &second);
    assert_eq!(broke.cause, BreakCause::ChunkChanged);
    assert_eq!(broke.chunk.as_ref().map(ChunkId::as_str), Some("u2"));
    assert_eq!(broke.message, message_of(&first, "u2"));
}

/// A chunk edited to text of as many tokens still changes the prompt: the
/// break names it, in the history (`chunk_changed`) and in the system
/// message (`system_changed`).
#[test]
fn an_edit_that_keeps_the_token_count_still_names_its_chunk() {
    let builder = builder(8_000);
    let mut session = ContextSession::new(builder.clone(), chat_state()).unwrap();
    let previous = session.build().unwrap();
    session
        .update(MemoryChunk::agent("a2", Role::Assistant, "answer 7"))
        .unwrap();
    let result = session.build().unwrap();
    let broke = assert_break(&previous, &result);
    assert_eq!(
        (broke.cause, broke.chunk.as_ref().map(ChunkId::as_str)),
        (BreakCause::ChunkChanged, Some("a2")),
        "{broke:?}"
    );

    let rules = MemoryChunk::new("rules", ChunkKind::System);
    let state = chat_state().with_chunk(rules.clone().with_text("Rule one."));
    let mut session = ContextSession::new(builder, state).unwrap();
    let previous = session.build().unwrap();
    session.update(rules.with_text("Rule two.")).unwrap();
    let result = session.build().unwrap();
    let broke = assert_break(&previous, &result);
    assert_eq!(
        (
            broke.message,
            broke.cause,
            broke.chunk.as_ref().map(ChunkId::as_str)
        ),
        (0, BreakCause::SystemChanged, Some("rules")),
        "{broke:?}"
    );
}

/// A chunk removed from the middle breaks the prefix as `chunk_changed`,
/// naming the chunk that left (not the one that moved up into its place).
#[test]
fn a_removed_chunk_is_chunk_changed_naming_it() {
    let mut session = ContextSession::new(builder(8_000), chat_state()).unwrap();
    let previous = session.build().unwrap();
    session.remove("u4").unwrap();
    let result = session.build().unwrap();
    let broke = assert_break(&previous, &result);
    assert_eq!(
        (broke.cause, broke.chunk.as_ref().map(ChunkId::as_str)),
        (BreakCause::ChunkChanged, Some("u4")),
        "{broke:?}"
    );
}

/// Between two builder builds of one state, a smaller budget that trims
/// more, or another escaping that rewrites a body, breaks the prefix as
/// `settings_changed` (not `refilled` or `chunk_changed`); the same
/// settings keep it whole.
#[test]
fn a_changed_budget_or_escaping_is_settings_changed() {
    let state = looped(5, 60).state(60);
    let base = builder(16_000);
    let previous = base.build(&state).unwrap();
    let same = one_shot(&base, &state, &previous);
    assert_eq!(cache(&same).broke_at, None);
    assert_eq!(cache(&same).stable_prefix_tokens, sent(&previous));

    let mut smaller = base.clone();
    smaller.max_tokens(12_000);
    let trimmed = one_shot(&smaller, &state, &previous);
    assert!(trimmed.token_count < previous.token_count);
    let broke = assert_break(&previous, &trimmed);
    assert_eq!(broke.cause, BreakCause::SettingsChanged, "{broke:?}");

    // Only the last question holds what XML escaping rewrites.
    let state =
        chat_state().with_chunk(MemoryChunk::agent("last", Role::User, "Is a < b && c > d?"));
    let previous = base.build(&state).unwrap();
    let mut xml = base.clone();
    xml.escape(EscapeMode::Xml);
    let escaped = one_shot(&xml, &state, &previous);
    let broke = assert_break(&previous, &escaped);
    assert_eq!(broke.cause, BreakCause::SettingsChanged, "{broke:?}");
    assert_eq!(
        broke.message,
        message_of(&previous, "last"),
        "the body escaped"
    );
}

/// Another model sends the same bytes, but a provider's prefix cache is
/// the model's own: none of the previous prompt is served, so the report
/// breaks at message 0 as `settings_changed`.
#[test]
fn a_changed_model_breaks_the_whole_prefix() {
    let state = chat_state();
    let previous = builder(8_000).build(&state).unwrap();
    let mut other = builder(8_000);
    other.model("gpt-4.1");
    let result = one_shot(&other, &state, &previous);
    assert_eq!(result.messages, previous.messages, "the same bytes");
    let report = cache(&result);
    assert_eq!(report.stable_prefix_tokens, 0, "{report:?}");
    let broke = report.broke_at.as_ref().expect("the cache broke");
    assert_eq!(
        (broke.message, broke.cause, broke.tokens_lost),
        (0, BreakCause::SettingsChanged, sent(&previous))
    );
}

// The CLI.

/// A session's JSON: the chat of [`chat_state`] with `extra` chunks after.
fn session_json(extra: &[Value]) -> Value {
    let mut chunks: Vec<Value> = (0..6)
        .flat_map(|n| {
            [
                json!({"id": format!("u{n}"), "kind": "agent", "role": "user", "text": format!("question {n}")}),
                json!({"id": format!("a{n}"), "kind": "agent", "role": "assistant", "text": format!("answer {n}")}),
            ]
        })
        .collect();
    chunks.extend(extra.iter().cloned());
    json!({"system_prompt": "Be brief.", "chunks": chunks})
}

fn ok_json(run: &Run) -> Value {
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    serde_json::from_str(&run.stdout).expect("a JSON report")
}

const BUDGET_FLAGS: [&str; 6] = [
    "--model",
    "gpt-4o",
    "--max-tokens",
    "8000",
    "--reserve",
    "500",
];

/// `build -` of `session` with the budget flags and `more`.
fn cli_build(session: &Value, more: &[&str]) -> Run {
    let mut args = vec!["build", "-"];
    args.extend(BUDGET_FLAGS);
    args.extend(more);
    run(&args, &session.to_string())
}

/// `build --previous REPORT` reports the `cache` the library's
/// `cache_since` gives on the same two builds, and keeps the previous
/// cut as a builder given it does: the whole report is the library's when
/// the prefix broke. When it did not, the previous prompt's last message
/// grew, and the report read back does not say which of that message's
/// tokens stay: the CLI's stable prefix leaves them out (all of them, a
/// lower bound), the rest of the report is the library's.
#[test]
fn build_previous_reports_the_cache_the_library_computes() {
    let dir = TempDir::new("cache-previous");
    let first_json = session_json(&[]);
    let first_run = cli_build(&first_json, &[]);
    let first_report = ok_json(&first_run);
    let report_path = dir.join("first.json");
    std::fs::write(&report_path, &first_run.stdout).unwrap();
    let report_path = report_path.display().to_string();
    let library = builder(8_000);
    let first_state = MemoryState::from_json_value(first_json).unwrap();
    let first = library.build(&first_state).unwrap();
    assert_eq!(
        serde_json::to_value(&first).unwrap(),
        first_report,
        "same settings"
    );

    // An edited chunk: the prefix breaks, every figure agrees.
    let mut edited = session_json(&[]);
    edited["chunks"][5]["text"] = json!("answer 2, at more length than before");
    let second = one_shot(
        &library,
        &MemoryState::from_json_value(edited.clone()).unwrap(),
        &first,
    );
    let cli = ok_json(&cli_build(&edited, &["--previous", &report_path]));
    assert_eq!(second.cache, Some(second.cache_since(&first)));
    assert_eq!(cli["cache"], serde_json::to_value(&second.cache).unwrap());
    assert_eq!(cli, serde_json::to_value(&second).unwrap());
    assert_eq!(cli["cache"]["broke_at"]["chunk"], "a2");
    assert_eq!(cli["cache"]["broke_at"]["cause"], "chunk_changed");

    // Another answer after the last: the last message grows.
    let appended = session_json(&[
        json!({"id": "a5b", "kind": "agent", "role": "assistant", "text": "And one more thing."}),
    ]);
    let state = MemoryState::from_json_value(appended.clone()).unwrap();
    let second = one_shot(&library, &state, &first);
    let report = cache(&second);
    assert_eq!(report.broke_at, None);
    assert!(
        grew(&first, &second, first.messages.len() - 1),
        "the last message grew"
    );
    let cli = ok_json(&cli_build(&appended, &["--previous", &report_path]));
    assert_eq!(cli["cache"]["broke_at"], Value::Null);
    let last = first.messages.last().unwrap().tokens;
    let cli_stable = cli["cache"]["stable_prefix_tokens"].as_u64().unwrap() as usize;
    assert_eq!(
        cli_stable,
        sent(&first) - last,
        "none of the grown message counted"
    );
    assert!(
        report.stable_prefix_tokens > cli_stable,
        "the library counts its old content"
    );
    assert_eq!(
        cli["stable_prefix_tokens"],
        cli["cache"]["stable_prefix_tokens"]
    );
    let mut without = cli.clone();
    let mut expected = serde_json::to_value(&second).unwrap();
    for report in [&mut without, &mut expected] {
        report["stable_prefix_tokens"] = Value::Null;
        report["cache"]["stable_prefix_tokens"] = Value::Null;
    }
    assert_eq!(without, expected);
}

/// `build --previous` over a window the budget trims keeps the previous
/// cut as a builder given the previous build does: a loop's next step
/// builds the library's report, `cache` and all.
#[test]
fn build_previous_keeps_the_cut_the_library_keeps() {
    let dir = TempDir::new("cache-previous-cut");
    let looped = looped(11, 61);
    let library = builder(16_000);
    let flags = [
        "--model",
        "gpt-4o",
        "--max-tokens",
        "16000",
        "--reserve",
        "500",
    ];
    let build = |state: &MemoryState, previous: Option<&str>| {
        let mut args = vec!["build", "-"];
        args.extend(flags);
        args.extend(
            previous
                .map(|file| ["--previous", file])
                .into_iter()
                .flatten(),
        );
        run(&args, &serde_json::to_string(state).unwrap())
    };
    let first_state = looped.state(60);
    let first = library.build(&first_state).unwrap();
    assert!(
        first.excluded().count() > 0
            || first
                .decisions
                .iter()
                .any(|d| trimmed_for_budget(d.decision))
    );
    let first_run = build(&first_state, None);
    assert_eq!(ok_json(&first_run), serde_json::to_value(&first).unwrap());
    let path = dir.join("first.json");
    std::fs::write(&path, &first_run.stdout).unwrap();

    let state = looped.state(61);
    let second = one_shot(&library, &state, &first);
    assert_eq!(second.trim_target, None, "the previous cut is kept");
    let cli = ok_json(&build(&state, Some(&path.display().to_string())));
    assert_eq!(cli, serde_json::to_value(&second).unwrap());
    assert_eq!(second.cache, Some(second.cache_since(&first)));
}

/// A `--previous` that is no report (not JSON, JSON of something else, no
/// file) stops `build` and `chat build` with exit 2 and a message naming
/// `--previous`, and nothing on stdout.
#[test]
fn a_bad_previous_exits_2_naming_the_flag() {
    let dir = TempDir::new("cache-bad-previous");
    let db = dir.join("chat.db").display().to_string();
    let appended = run(
        &["chat", "append", "--db", &db, "--chat", "c"],
        &session_json(&[]).to_string(),
    );
    assert_eq!(appended.code, 0, "{}", appended.stderr);
    let not_json = dir.join("not-json.json");
    std::fs::write(&not_json, "model: gpt-4o\n").unwrap();
    let not_report = dir.join("not-report.json");
    std::fs::write(&not_report, r#"{"chunks": [], "model": "gpt-4o"}"#).unwrap();
    let missing = dir.join("missing.json");
    for file in [&not_json, &not_report, &missing] {
        let file = file.display().to_string();
        let built = cli_build(&session_json(&[]), &["--previous", &file]);
        let mut args = vec![
            "chat",
            "build",
            "--db",
            &db,
            "--chat",
            "c",
            "--previous",
            &file,
        ];
        args.extend(BUDGET_FLAGS);
        let chat = run(&args, "");
        for (command, out) in [("build", built), ("chat build", chat)] {
            assert_eq!(out.code, 2, "{command} {file}: {}", out.stderr);
            assert!(
                out.stderr.contains("--previous"),
                "{command} {file}: {}",
                out.stderr
            );
            assert_eq!(out.stdout, "", "{command} {file}");
        }
    }
}

/// `chat build --previous REPORT` on a SQLite store reports the `cache`
/// of its build against that report, as the library reads both back: a
/// chat appended to keeps the whole previous prompt; an answer replaced
/// breaks it where that answer was.
#[test]
fn chat_build_previous_reports_the_cache_against_that_report() {
    let dir = TempDir::new("cache-chat");
    let db = dir.join("chat.db").display().to_string();
    let chat = |args: &[&str], stdin: &str| {
        let mut all = vec!["chat", args[0], "--db", &db, "--chat", "c"];
        all.extend(&args[1..]);
        run(&all, stdin)
    };
    let build = |previous: Option<&str>| {
        let mut args = vec!["build"];
        args.extend(BUDGET_FLAGS);
        if let Some(file) = previous {
            args.extend(["--previous", file]);
        }
        chat(&args, "")
    };
    ok_json(&chat(&["append"], &session_json(&[]).to_string()));
    let first = build(None);
    let first_report = ok_json(&first);
    assert_eq!(
        first_report.get("cache"),
        None,
        "a new process has no build before"
    );
    let path = dir.join("first.json");
    std::fs::write(&path, &first.stdout).unwrap();
    let path = path.display().to_string();
    let read = |text: &str| BuildResult::from_report(text, "--previous").expect("a report");

    let more = json!({"chunks": [
        {"id": "u6", "kind": "agent", "role": "user", "text": "question 6"},
        {"id": "a6", "kind": "agent", "role": "assistant", "text": "answer 6"},
    ]});
    ok_json(&chat(&["append"], &more.to_string()));
    let second = build(Some(&path));
    let second_report = ok_json(&second);
    let expected = read(&second.stdout).cache_since(&read(&first.stdout));
    assert_eq!(
        second_report["cache"],
        serde_json::to_value(&expected).unwrap()
    );
    assert_eq!(expected.broke_at, None);
    assert_eq!(expected.stable_prefix_tokens, sent(&read(&first.stdout)));

    let replaced = json!({"chunks": [{"id": "a6-again", "kind": "agent", "role": "assistant", "text": "answer 6, again"}]});
    let path_second = dir.join("second.json");
    std::fs::write(&path_second, &second.stdout).unwrap();
    ok_json(&chat(
        &["append", "--replace-last-assistant"],
        &replaced.to_string(),
    ));
    let third = build(Some(&path_second.display().to_string()));
    let third_report = ok_json(&third);
    let expected = read(&third.stdout).cache_since(&read(&second.stdout));
    assert_eq!(
        third_report["cache"],
        serde_json::to_value(&expected).unwrap()
    );
    let broke = expected
        .broke_at
        .as_ref()
        .expect("the replaced answer breaks the prefix");
    assert_eq!(broke.chunk.as_ref().map(ChunkId::as_str), Some("a6"));
    assert_eq!(broke.cause, BreakCause::ChunkChanged);
}

/// `replay` writes `cache` on every turn (null on the first), and its
/// summary's `prefix_changes` counts the turns whose `broke_at` is not
/// null; on a budget that refills there are some.
#[test]
fn replay_lines_carry_cache_and_the_summary_counts_the_breaks() {
    let session = serde_json::to_value(looped(11, 60).state(60)).expect("a session as JSON");
    let out = run(
        &[
            "replay",
            "-",
            "--max-tokens",
            "16000",
            "--reserve",
            "500",
            "--every",
            "4",
        ],
        &session.to_string(),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines: Vec<Value> = (out.stdout.lines())
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let (summary, turns) = lines.split_last().expect("a summary line");
    assert!(turns.len() > 10);
    assert_eq!(
        turns[0]["cache"],
        Value::Null,
        "the first turn has no previous"
    );
    let mut breaks = 0;
    for turn in &turns[1..] {
        let cache = turn.get("cache").expect("every turn carries cache");
        assert_eq!(cache["stable_prefix_tokens"], turn["stable_prefix_tokens"]);
        if !cache["broke_at"].is_null() {
            breaks += 1;
            assert!(cache["broke_at"]["cause"].is_string(), "{cache}");
        }
    }
    assert!(breaks > 0, "the budget refills");
    assert_eq!(summary["summary"]["prefix_changes"], breaks);
}

/// An engine built twice in one process reports, on the second build, the
/// `cache` against its first; appended to, the whole first prompt stays.
#[test]
fn an_engine_built_twice_reports_the_cache_of_its_second_build() {
    let dir = TempDir::new("cache-engine");
    let db = dir.join("chat.db").display().to_string();
    let looped = looped(4, 12);
    let mut engine =
        ContextEngine::open(store::open(&db, true).unwrap(), "c", builder(200_000)).unwrap();
    engine.set_system_prompt(looped.opening.system_prompt.clone());
    engine
        .extend(looped.opening.chunks.iter().cloned())
        .unwrap();
    engine
        .extend(looped.steps[..6].iter().flatten().cloned())
        .unwrap();
    let first = engine.build().unwrap();
    assert_eq!(first.cache, None);
    engine
        .extend(looped.steps[6..].iter().flatten().cloned())
        .unwrap();
    let second = engine.build().unwrap();
    let report = cache(&second);
    assert_eq!(report, &second.cache_since(&first));
    assert_eq!(report.broke_at, None);
    assert_eq!(
        Some(report.stable_prefix_tokens),
        second.stable_prefix_tokens
    );
    assert!(report.stable_prefix_tokens >= sent(&first) - first.messages.last().unwrap().tokens);
}
