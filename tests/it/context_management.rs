//! Anthropic's `context_management` edits, applied by us: random edits over
//! random agent loops with room to spare are held to a reference written
//! here from the semantics (which tool uses, inputs and thinking are
//! cleared; `applied_edits`), and `cleared_input_tokens` to the difference
//! of two builds' exact counts.

use std::collections::BTreeSet;

use crate::common::*;
use agent_context::budget::{AppliedEdit, ContextManagement, Decision, DropReason, StubReason};
use agent_context::{BuildResult, ChunkKind, ContextBuilder, MemoryChunk, MemoryState, Role};
use proptest::prelude::*;
use serde_json::{Value, json};

const TOOLS: [&str; 4] = ["bash", "read_file", "memory", "grep"];

/// One model call: thinking or not, then calls with their results.
#[derive(Debug, Clone)]
struct Step {
    thinking: Option<usize>,
    calls: Vec<(usize, usize)>,
    user_after: bool,
}

fn step() -> impl Strategy<Value = Step> {
    let call = (0..TOOLS.len(), 1usize..400);
    (
        prop::option::weighted(0.6, 5usize..120),
        prop::collection::vec(call, 1..3),
        prop::bool::weighted(0.1),
    )
        .prop_map(|(thinking, calls, user_after)| Step {
            thinking,
            calls,
            user_after,
        })
}

/// A loop: one instruction, then the steps.
fn agent_loop(steps: &[Step]) -> MemoryState {
    let mut state = MemoryState::new()
        .with_system_prompt("You are a coding agent.")
        .with_chunk(MemoryChunk::agent("u0", Role::User, "Fix the build."));
    let mut n = 0;
    for (s, step) in steps.iter().enumerate() {
        if let Some(words) = step.thinking {
            state = state.with_chunk(
                MemoryChunk::new(format!("t{s}"), ChunkKind::Thinking)
                    .with_text("I should look at the next file. ".repeat(words / 6 + 1)),
            );
        }
        for &(tool, _) in &step.calls {
            n += 1;
            let call = MemoryChunk::new(format!("w{n}"), ChunkKind::Workflow)
                .with_tool(TOOLS[tool])
                .with_call_id(format!("k{n}"))
                .with_data(json!({"path": format!("src/file{n}.rs")}));
            state = state.with_chunk(call);
        }
        let first = n + 1 - step.calls.len();
        for (offset, &(tool, lines)) in step.calls.iter().enumerate() {
            let n = first + offset;
            let result = MemoryChunk::new(format!("r{n}"), ChunkKind::Environment)
                .with_tool(TOOLS[tool])
                .with_call_id(format!("k{n}"))
                .with_text(format!("line {n}: let x = {n};\n").repeat(lines));
            state = state.with_chunk(result);
        }
        if step.user_after {
            state = state.with_chunk(MemoryChunk::agent(format!("u{s}x"), Role::User, "And?"));
        }
    }
    state
}

fn management() -> impl Strategy<Value = Value> {
    let thinking = prop_oneof![
        Just(json!({"type": "clear_thinking_20251015"})),
        Just(json!({"type": "clear_thinking_20251015", "keep": "all"})),
        (0u64..4).prop_map(|n| json!({"type": "clear_thinking_20251015",
            "keep": {"type": "thinking_turns", "value": n}})),
    ];
    let trigger = prop_oneof![
        Just(Value::Null),
        (0u64..20_000).prop_map(|v| json!({"type": "input_tokens", "value": v})),
        (0u64..12).prop_map(|v| json!({"type": "tool_uses", "value": v})),
    ];
    let inputs = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        Just(json!(["bash", "grep"])),
    ];
    let tools = (
        trigger,
        prop::option::of(0u64..7),
        prop::option::of(0u64..3_000),
        prop::option::of(prop::sample::subsequence(TOOLS.to_vec(), 0..3)),
        inputs,
    )
        .prop_map(|(trigger, keep, at_least, exclude, inputs)| {
            let mut edit = json!({"type": "clear_tool_uses_20250919"});
            let set = |edit: &mut Value, key: &str, value: Value| {
                if !value.is_null() {
                    edit[key] = value;
                }
            };
            set(&mut edit, "trigger", trigger);
            set(
                &mut edit,
                "keep",
                json!(keep.map(|v| json!({"type": "tool_uses", "value": v}))),
            );
            set(
                &mut edit,
                "clear_at_least",
                json!(at_least.map(|v| json!({"type": "input_tokens", "value": v}))),
            );
            set(&mut edit, "exclude_tools", json!(exclude));
            set(&mut edit, "clear_tool_inputs", inputs);
            edit
        });
    (prop::option::of(thinking), prop::option::of(tools)).prop_map(
        |(thinking, tools)| json!({"edits": thinking.into_iter().chain(tools).collect::<Vec<_>>()}),
    )
}

/// A build with room to spare, with `edits`.
fn build(state: &MemoryState, edits: &Value) -> BuildResult {
    let management: ContextManagement = serde_json::from_value(edits.clone()).unwrap();
    let mut builder = ContextBuilder::new();
    builder.max_tokens(1_000_000);
    builder.policy_mut().context_management = Some(management);
    builder.build(state).unwrap()
}

/// Which model call each chunk belongs to: a call starts where the model
/// writes after something it reads.
fn step_of(chunks: &[MemoryChunk]) -> Vec<usize> {
    let reads = |c: &MemoryChunk| c.is_user_turn() || c.kind == ChunkKind::Environment;
    let (mut step, mut writing) = (0, false);
    chunks
        .iter()
        .map(|c| {
            if reads(c) {
                writing = false;
            } else if !writing {
                step += 1;
                writing = true;
            }
            step
        })
        .collect()
}

/// The chunks the reference clears, by id, and its applied edits with the
/// tokens left to measure.
#[derive(Debug, Default, PartialEq)]
struct Cleared {
    stubbed: BTreeSet<String>,
    thinking: BTreeSet<String>,
    /// (type, count) of each applied edit.
    applied: Vec<(String, usize)>,
}

fn reference(state: &MemoryState, edits: &Value) -> Cleared {
    let chunks = &state.chunks;
    let mut cleared = Cleared::default();
    let mut thinking_edit = None;
    let mut tool_edit = None;
    for edit in edits["edits"].as_array().unwrap() {
        match edit["type"].as_str().unwrap() {
            "clear_thinking_20251015" => thinking_edit = Some(edit),
            _ => tool_edit = Some(edit),
        }
    }
    if let Some(edit) = thinking_edit {
        let steps = step_of(chunks);
        let mut turns: Vec<usize> = (0..chunks.len())
            .filter(|&i| chunks[i].kind == ChunkKind::Thinking)
            .map(|i| steps[i])
            .collect();
        turns.dedup();
        turns.reverse();
        let keep = match &edit["keep"] {
            Value::Null => Some(1),
            Value::String(_) => None,
            keep => Some(keep["value"].as_u64().unwrap() as usize),
        };
        if let Some(keep) = keep {
            let kept = &turns[..keep.min(turns.len())];
            let gone: Vec<usize> = (0..chunks.len())
                .filter(|&i| chunks[i].kind == ChunkKind::Thinking && !kept.contains(&steps[i]))
                .collect();
            if !gone.is_empty() {
                cleared
                    .applied
                    .push(("clear_thinking_20251015".into(), turns.len() - kept.len()));
            }
            cleared.thinking = gone.iter().map(|&i| chunks[i].id.to_string()).collect();
        }
    }
    if let Some(edit) = tool_edit {
        let uses: Vec<usize> = (0..chunks.len())
            .filter(|&i| chunks[i].kind == ChunkKind::Workflow)
            .collect();
        let unedited = build(state, &json!({"edits": []})).token_count as u64;
        let fires = match &edit["trigger"] {
            Value::Null => unedited > 100_000,
            t if t["type"] == "tool_uses" => uses.len() as u64 > t["value"].as_u64().unwrap(),
            t => unedited > t["value"].as_u64().unwrap(),
        };
        let keep = edit["keep"]["value"].as_u64().unwrap_or(3) as usize;
        let excluded = |tool: &str| {
            edit["exclude_tools"]
                .as_array()
                .is_some_and(|t| t.iter().any(|x| x == tool))
        };
        let inputs = |tool: &str| match &edit["clear_tool_inputs"] {
            Value::Bool(all) => *all,
            Value::Array(tools) => tools.iter().any(|x| x == tool),
            _ => false,
        };
        let mut stubbed = BTreeSet::new();
        let mut count = 0;
        let old = uses.len().saturating_sub(keep);
        for &call in uses.iter().take(if fires { old } else { 0 }) {
            let tool = chunks[call].tool.as_deref().unwrap();
            let id = chunks[call].call_id.as_deref();
            let members: Vec<usize> = (0..chunks.len())
                .filter(|&i| chunks[i].call_id.as_deref() == id)
                .collect();
            // `keep` alone protects tool uses here, the newest one's
            // parallel calls included (no chunk is pinned or critical).
            if excluded(tool) {
                continue;
            }
            count += 1;
            for &i in &members {
                if i != call || inputs(tool) {
                    stubbed.insert(chunks[i].id.to_string());
                }
            }
        }
        let at_least = edit["clear_at_least"]["value"].as_u64().unwrap_or(0);
        if count > 0 && freed_without_floor(state, edits) >= at_least as i64 {
            cleared
                .applied
                .push(("clear_tool_uses_20250919".into(), count));
            cleared.stubbed = stubbed;
        }
    }
    cleared
}

/// What the tool-use edit frees with its `clear_at_least` taken away.
fn freed_without_floor(state: &MemoryState, edits: &Value) -> i64 {
    let mut without = edits.clone();
    let list = without["edits"].as_array_mut().unwrap();
    for edit in list.iter_mut() {
        if let Some(edit) = edit.as_object_mut() {
            edit.remove("clear_at_least");
        }
    }
    let thinking_only: Vec<Value> = list
        .iter()
        .filter(|e| e["type"] == "clear_thinking_20251015")
        .cloned()
        .collect();
    let before = build(state, &json!({"edits": thinking_only})).token_count as i64;
    before - build(state, &without).token_count as i64
}

/// What a build cleared, read from its decisions and report.
fn observed(result: &BuildResult) -> Cleared {
    let mut cleared = Cleared::default();
    for d in &result.decisions {
        match d.decision {
            Decision::Stubbed {
                reason: StubReason::ClearToolUses,
                ..
            } => {
                cleared.stubbed.insert(d.id.to_string());
            }
            Decision::Dropped {
                reason: DropReason::ClearThinking,
            } => {
                cleared.thinking.insert(d.id.to_string());
            }
            _ => {}
        }
    }
    cleared.applied = result
        .applied_edits
        .iter()
        .map(|edit| match *edit {
            AppliedEdit::ClearToolUses {
                cleared_tool_uses, ..
            } => ("clear_tool_uses_20250919".into(), cleared_tool_uses),
            AppliedEdit::ClearThinking {
                cleared_thinking_turns,
                ..
            } => ("clear_thinking_20251015".into(), cleared_thinking_turns),
            _ => ("other".into(), 0),
        })
        .collect();
    cleared
}

/// Each applied edit's `cleared_input_tokens` is the difference of the
/// exact counts of the builds without it and with it.
fn assert_cleared_tokens_exact(state: &MemoryState, edits: &Value, result: &BuildResult) {
    let list = edits["edits"].as_array().unwrap();
    let thinking: Vec<Value> = list
        .iter()
        .filter(|e| e["type"] == "clear_thinking_20251015")
        .cloned()
        .collect();
    let none = build(state, &json!({"edits": []})).token_count as i64;
    let after_thinking = build(state, &json!({"edits": thinking})).token_count as i64;
    for edit in &result.applied_edits {
        match *edit {
            AppliedEdit::ClearThinking {
                cleared_input_tokens,
                ..
            } => assert_eq!(cleared_input_tokens, none - after_thinking),
            AppliedEdit::ClearToolUses {
                cleared_input_tokens,
                ..
            } => assert_eq!(
                cleared_input_tokens,
                after_thinking - result.token_count as i64
            ),
            _ => unreachable!(),
        }
    }
}

proptest! {
    #![proptest_config(proptest_config_with(48))]

    #[test]
    fn random_edits_clear_what_the_semantics_say(
        steps in prop::collection::vec(step(), 2..30),
        edits in management(),
    ) {
        let state = agent_loop(&steps);
        let result = build(&state, &edits);
        prop_assert_eq!(observed(&result), reference(&state, &edits), "{}", edits);
        assert_cleared_tokens_exact(&state, &edits, &result);
        assert_within_budget(&result);
        assert_recount(&result, agent_context::tokens::Encoding::O200kBase);
        assert_units_whole(&state, &result);
        assert_protected_present(&state, &result);
    }
}

/// A loop of ten tool uses of ~1,000 tokens each.
fn ten_uses() -> MemoryState {
    let steps: Vec<Step> = (0..10)
        .map(|i| Step {
            thinking: Some(30),
            calls: vec![(i % 2, 120)],
            user_after: false,
        })
        .collect();
    agent_loop(&steps)
}

#[test]
fn old_tool_uses_become_stubs_that_keep_their_pairs() {
    let state = ten_uses();
    let edits = json!({"edits": [{"type": "clear_tool_uses_20250919",
        "trigger": {"type": "tool_uses", "value": 5},
        "keep": {"type": "tool_uses", "value": 3}, "clear_tool_inputs": ["bash"]}]});
    let result = build(&state, &edits);
    let cleared = observed(&result);
    // w1..w7 are old; bash runs the odd ones (tool 0 at steps 0, 2, ...).
    let expected: BTreeSet<String> = (1..=7)
        .map(|n| format!("r{n}"))
        .chain([1, 3, 5, 7].map(|n| format!("w{n}")))
        .collect();
    assert_eq!(cleared.stubbed, expected);
    let prompt: String = result.messages.iter().map(|m| m.content.as_str()).collect();
    assert!(prompt.contains("<tool_result id=\"r1\" tool=\"bash\" call_id=\"k1\" elided=\""));
    assert!(prompt.contains("<tool_call id=\"w2\" tool=\"read_file\" call_id=\"k2\">"));
    assert!(prompt.contains("<tool_call id=\"w1\" tool=\"bash\" call_id=\"k1\" elided=\""));
    let AppliedEdit::ClearToolUses {
        cleared_tool_uses,
        cleared_input_tokens,
    } = result.applied_edits[0]
    else {
        panic!("{:?}", result.applied_edits)
    };
    assert_eq!(cleared_tool_uses, 7);
    assert!(cleared_input_tokens > 5_000, "{cleared_input_tokens}");
    // The trigger not reached, nothing is cleared.
    let quiet = json!({"edits": [{"type": "clear_tool_uses_20250919",
        "trigger": {"type": "tool_uses", "value": 10}}]});
    let kept = build(&state, &quiet);
    assert!(kept.applied_edits.is_empty() && observed(&kept).stubbed.is_empty());
    // Nor when it would free less than asked.
    let greedy = json!({"edits": [{"type": "clear_tool_uses_20250919",
        "trigger": {"type": "tool_uses", "value": 0},
        "clear_at_least": {"type": "input_tokens", "value": 1_000_000}}]});
    assert!(build(&state, &greedy).applied_edits.is_empty());
}

/// `clear_tool_uses` that always fires and keeps the newest `keep` uses.
fn clear_keeping(keep: u64) -> Value {
    json!({"type": "clear_tool_uses_20250919",
        "trigger": {"type": "tool_uses", "value": 0},
        "keep": {"type": "tool_uses", "value": keep}})
}

/// The applied tool-use edits' (uses, tokens).
fn tool_edits(result: &BuildResult) -> Vec<(usize, i64)> {
    result
        .applied_edits
        .iter()
        .filter_map(|edit| match *edit {
            AppliedEdit::ClearToolUses {
                cleared_tool_uses,
                cleared_input_tokens,
            } => Some((cleared_tool_uses, cleared_input_tokens)),
            _ => None,
        })
        .collect()
}

#[test]
fn each_applied_edit_reports_only_what_it_cleared_first() {
    let state = ten_uses();
    let alone = |keep| tool_edits(&build(&state, &json!({"edits": [clear_keeping(keep)]})));
    let (five, two) = (alone(5)[0], alone(2)[0]);
    assert_eq!((five.0, two.0), (5, 8));

    // The same edit twice: the second clears nothing new and is not listed.
    let twice = build(
        &state,
        &json!({"edits": [clear_keeping(2), clear_keeping(2)]}),
    );
    assert_eq!(tool_edits(&twice), vec![two]);

    // Keep 5, then keep 2: the second reports the 3 uses it adds, and the
    // tokens they free, which the two entries add up to.
    let narrowing = build(
        &state,
        &json!({"edits": [clear_keeping(5), clear_keeping(2)]}),
    );
    let edits = tool_edits(&narrowing);
    assert_eq!(edits.len(), 2, "{edits:?}");
    assert_eq!(edits[0], five);
    assert_eq!(edits[1].0, 3);
    assert_eq!(edits[0].1 + edits[1].1, two.1);
    assert_eq!(observed(&narrowing).stubbed, observed(&twice).stubbed);

    // However many edits, no more uses are reported than there are.
    let many = json!({"edits": vec![clear_keeping(2); 10_000]});
    let reported: usize = tool_edits(&build(&state, &many)).iter().map(|e| e.0).sum();
    assert_eq!(reported, 8);
}

/// An instruction, one old tool use, then a step of two parallel calls.
fn parallel_newest_step() -> MemoryState {
    let result = |id: &str, call: &str, n: usize| {
        MemoryChunk::new(id, ChunkKind::Environment)
            .with_tool("read_file")
            .with_call_id(call)
            .with_text(format!("line {n}\n").repeat(200))
    };
    let call = |id: &str, call: &str| {
        MemoryChunk::new(id, ChunkKind::Workflow)
            .with_tool("read_file")
            .with_call_id(call)
            .with_data(json!({"path": id}))
    };
    MemoryState::new()
        .with_chunk(MemoryChunk::agent("u0", Role::User, "Fix the build."))
        .with_chunk(call("w1", "k1"))
        .with_chunk(result("r1", "k1", 1))
        .with_chunk(call("wa", "ka"))
        .with_chunk(call("wb", "kb"))
        .with_chunk(result("ra", "ka", 2))
        .with_chunk(result("rb", "kb", 3))
}

#[test]
fn keep_counts_the_parallel_calls_of_the_newest_step_one_by_one() {
    let state = parallel_newest_step();
    let cleared = |keep: u64| {
        let result = build(&state, &json!({"edits": [clear_keeping(keep)]}));
        assert_protected_present(&state, &result);
        assert_units_whole(&state, &result);
        let uses: usize = tool_edits(&result).iter().map(|e| e.0).sum();
        (observed(&result).stubbed, uses)
    };
    let ids = |ids: &[&str]| ids.iter().map(|id| id.to_string()).collect::<BTreeSet<_>>();
    // Keep 1: the older of the two parallel calls is cleared, as
    // Anthropic's server clears it.
    assert_eq!(cleared(1), (ids(&["r1", "ra"]), 2));
    assert_eq!(cleared(2), (ids(&["r1"]), 1));
    assert_eq!(cleared(3), (ids(&[]), 0));
    // A pinned result protects its own use whatever `keep` says.
    let mut pinned = parallel_newest_step();
    pinned.chunks[5].pinned = true;
    let result = build(&pinned, &json!({"edits": [clear_keeping(0)]}));
    assert_eq!(observed(&result).stubbed, ids(&["r1", "rb"]));

    // Without `context_management`, the budget protects the whole newest
    // step: at a budget that stubs every result it may, both stay whole.
    let mut builder = ContextBuilder::new();
    builder.max_tokens(700);
    let tight = builder.build(&state).unwrap();
    let stubbed: Vec<&str> = tight
        .decisions
        .iter()
        .filter(|d| {
            matches!(
                d.decision,
                Decision::Stubbed { .. } | Decision::Dropped { .. }
            )
        })
        .map(|d| d.id.as_str())
        .collect();
    assert!(stubbed.contains(&"r1"), "{stubbed:?}");
    assert!(
        !stubbed.contains(&"ra") && !stubbed.contains(&"rb"),
        "{stubbed:?}"
    );
}

#[test]
fn keep_holds_alike_in_a_session_and_a_stored_chat() {
    use agent_context::{ContextEngine, ContextSession, store};
    let state = parallel_newest_step();
    let management: ContextManagement =
        serde_json::from_value(json!({"edits": [clear_keeping(1)]})).unwrap();
    let mut builder = ContextBuilder::new();
    builder.max_tokens(1_000_000);
    builder.policy_mut().context_management = Some(management);
    let one_shot = builder.build(&state).unwrap();
    let expected = observed(&one_shot).stubbed;
    assert_eq!(expected, BTreeSet::from(["r1".to_owned(), "ra".to_owned()]));

    // A session built after every chunk.
    let mut session = ContextSession::new(builder.clone(), MemoryState::new()).unwrap();
    for chunk in &state.chunks {
        session.push(chunk.clone()).unwrap();
        session.build().unwrap();
    }
    assert_eq!(session.build().unwrap().messages, one_shot.messages);

    // A chat appended to, then built by a fresh engine.
    let dir = crate::common::temp::TempDir::new("keep-chat");
    let db = dir.join("chat.db").display().to_string();
    let mut writer =
        ContextEngine::open(store::open(&db, true).unwrap(), "c", builder.clone()).unwrap();
    writer.extend(state.chunks.iter().cloned()).unwrap();
    writer.save().unwrap();
    let mut fresh = ContextEngine::open(store::open(&db, false).unwrap(), "c", builder).unwrap();
    let stored = fresh.build().unwrap();
    assert_eq!(stored.messages, one_shot.messages);
    assert_eq!(observed(&stored).stubbed, expected);
}

#[test]
fn old_thinking_goes_and_the_report_says_so() {
    let state = ten_uses();
    let edits = json!({"edits": [{"type": "clear_thinking_20251015",
        "keep": {"type": "thinking_turns", "value": 2}}]});
    let result = build(&state, &edits);
    let gone: BTreeSet<String> = (0..8).map(|s| format!("t{s}")).collect();
    assert_eq!(observed(&result).thinking, gone);
    let report = serde_json::to_value(&result).unwrap();
    assert_eq!(
        report["applied_edits"][0]["type"],
        "clear_thinking_20251015"
    );
    assert_eq!(report["applied_edits"][0]["cleared_thinking_turns"], 8);
    let t0 = report["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["id"] == "t0")
        .unwrap();
    assert_eq!(t0["decision"], "dropped");
    assert_eq!(t0["reason"], "clear_thinking_20251015");
    assert!(result.excluded().any(|id| id == "t0"));
    assert!(result.elided.is_none(), "edits leave no elision marker");
}

#[test]
fn no_edits_keep_everything_and_the_budget_still_holds_after_edits() {
    let state = ten_uses();
    let all = build(&state, &json!({"edits": []}));
    assert!(all.excluded().next().is_none() && all.applied_edits.is_empty());
    let unedited = ContextBuilder::new().build(&state).unwrap();
    assert_eq!(all.token_count, unedited.token_count);
    // Edits first, then the ladder when the edited prompt does not fit.
    let mut builder = ContextBuilder::new();
    builder.max_tokens(3_000);
    builder.policy_mut().context_management = Some(
        serde_json::from_value(json!({"edits": [{"type": "clear_tool_uses_20250919",
            "trigger": {"type": "tool_uses", "value": 0},
            "keep": {"type": "tool_uses", "value": 5}}]}))
        .unwrap(),
    );
    let tight = builder.build(&state).unwrap();
    assert_within_budget(&tight);
    assert_units_whole(&state, &tight);
    assert_protected_present(&state, &tight);
    assert!(!tight.applied_edits.is_empty());
    assert!(
        tight.elided.is_some(),
        "the ladder dropped what still did not fit"
    );
}

#[test]
fn a_session_applies_its_own_edits_unless_the_policy_has_some() {
    let mut state = ten_uses();
    state.context_management = Some(
        serde_json::from_value(json!({"edits": [{"type": "clear_thinking_20251015"}]})).unwrap(),
    );
    let own = ContextBuilder::new().build(&state).unwrap();
    assert_eq!(observed(&own).thinking.len(), 9);
    let overridden = build(&state, &json!({"edits": []}));
    assert!(overridden.applied_edits.is_empty());
    let none: ContextManagement = serde_json::from_value(json!({})).unwrap();
    assert_eq!(none, ContextManagement::default());
}

#[test]
fn a_native_anthropic_request_carries_the_edits_applied_not_asked_for() {
    use agent_context::adapter::{NativeOptions, anthropic_request};
    use agent_context::render::Protocol;
    let state = ten_uses();
    let mut builder = ContextBuilder::new();
    builder
        .protocol(Protocol::Native)
        .user_first(true)
        .reserve_output(1_000);
    builder.policy_mut().context_management = Some(
        serde_json::from_value(json!({"edits": [{"type": "clear_tool_uses_20250919",
            "trigger": {"type": "tool_uses", "value": 0}, "clear_tool_inputs": true}]}))
        .unwrap(),
    );
    let result = builder.build(&state).unwrap();
    assert_eq!(observed(&result).stubbed.len(), 14);
    let body = anthropic_request(&result, &NativeOptions::default())
        .unwrap()
        .body;
    assert!(body.get("context_management").is_none(), "{body}");
    // The cleared calls stay tool_use blocks paired with their results.
    let blocks: Vec<&Value> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().into_iter().flatten())
        .collect();
    let uses = blocks.iter().filter(|b| b["type"] == "tool_use").count();
    let results = blocks.iter().filter(|b| b["type"] == "tool_result").count();
    assert_eq!((uses, results), (10, 10), "{body}");
    let call = blocks.iter().find(|b| b["type"] == "tool_use").unwrap();
    assert!(call["input"].is_object(), "{call}");
    let first = blocks.iter().find(|b| b["type"] == "tool_result").unwrap();
    assert!(first.to_string().contains("tokens elided"), "{first}");
}

#[test]
fn edits_count_exactly_when_a_renderer_writes_parts_that_join_unclean() {
    // Results written with a leading space: a message of two is counted
    // joined, and bodies the build let go must come back to be measured.
    let mut builder = ContextBuilder::new();
    builder.renderers_mut().register_fn(
        &["result"],
        Role::User,
        |chunk| chunk.kind == ChunkKind::Environment,
        |chunk, _, out| {
            out.push_str(" result: ");
            out.push_str(chunk.text.as_deref().unwrap_or_default());
        },
    );
    builder.max_tokens(3_000);
    builder.policy_mut().context_management = Some(
        serde_json::from_value(json!({"edits": [{"type": "clear_thinking_20251015"},
            {"type": "clear_tool_uses_20250919", "trigger": {"type": "tool_uses", "value": 2}}]}))
        .unwrap(),
    );
    let steps: Vec<Step> = (0..10)
        .map(|_| Step {
            thinking: Some(30),
            calls: vec![(0, 60), (1, 60)],
            user_after: false,
        })
        .collect();
    let state = agent_loop(&steps);
    let result = builder.build(&state).unwrap();
    assert_within_budget(&result);
    assert_recount(&result, agent_context::tokens::Encoding::O200kBase);
    // The renderer has no stubs: its results cannot be cleared.
    assert_eq!(result.applied_edits.len(), 1, "{:?}", result.applied_edits);
}
