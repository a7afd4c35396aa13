//! The budget ladder: numeric fixtures, caps, stubs, priorities, low-water
//! mark, the previous cut, and summaries.

use std::sync::Arc;

use crate::common::limits::MIN_CAP;
use crate::common::*;
use agent_context::budget::{CapTarget, Decision, DropReason, Summarizer};
use agent_context::render::EscapeMode;
use agent_context::tokens::{
    Calibration, Encoding, EstimateFactor, Framing, TiktokenCounter, TokenCounter,
};
use agent_context::{ChunkKind, ContextBuilder, ErrorKind, MemoryChunk, MemoryState, Role};
use proptest::prelude::*;

/// Counts words, so fixtures can be written in exact numbers.
#[derive(Debug)]
struct Words;

impl TokenCounter for Words {
    fn count(&self, text: &str) -> usize {
        text.split_whitespace().count()
    }
    fn is_exact(&self) -> bool {
        true
    }
    fn encoding_name(&self) -> &str {
        "words"
    }
}

/// A builder that counts words, renders bodies bare and frames nothing:
/// every entry costs exactly its words. The marker costs 3 words.
fn word_builder(max_tokens: usize) -> ContextBuilder {
    let mut builder = ContextBuilder::new();
    builder
        .counter(Arc::new(Words))
        .framing(Framing::None)
        .max_tokens(max_tokens)
        .renderers_mut()
        .register_fn(
            &[],
            Role::Assistant,
            |_| true,
            |chunk, ctx, out| ctx.write_body(out, chunk.text.as_deref().unwrap_or_default()),
        );
    builder.policy_mut().low_water = 1.0;
    builder
}

fn words(n: usize) -> String {
    vec!["w"; n].join(" ")
}

fn entries(sizes: &[usize]) -> MemoryState {
    sizes
        .iter()
        .enumerate()
        .fold(MemoryState::new(), |state, (i, &n)| {
            state.with_chunk(MemoryChunk::agent(
                format!("e{}", i + 1),
                Role::Assistant,
                words(n),
            ))
        })
}

#[test]
fn four_entries_of_25_in_55_keep_the_last_two() {
    let result = word_builder(55).build(&entries(&[25, 25, 25, 25])).unwrap();
    assert_eq!(ids(result.included()), ["e3", "e4"]);
    assert_eq!(
        result.token_count,
        25 + 25 + 3,
        "two entries and the marker"
    );
}

#[test]
fn a_single_entry_over_budget_is_dropped() {
    let result = word_builder(55).build(&entries(&[60])).unwrap();
    assert!(result.included().next().is_none());
    assert_eq!(ids(result.excluded()), ["e1"]);
    assert_eq!(result.token_count, 3);
}

#[test]
fn the_reserve_is_headroom_taken_from_the_budget() {
    let mut builder = word_builder(80);
    builder.reserve_output(25);
    let result = builder.build(&entries(&[25, 25, 25, 25])).unwrap();
    assert_eq!((result.budget, result.included().count()), (55, 2));
}

#[test]
fn a_protected_entry_larger_than_the_budget_fails_with_the_numbers() {
    let state = MemoryState::new()
        .with_chunk(MemoryChunk::agent("e1", Role::Assistant, words(60)).pinned());
    let error = word_builder(55).build(&state).unwrap_err();
    match error.kind() {
        ErrorKind::BudgetExceeded {
            required,
            available,
            ..
        } => assert_eq!((*required, *available), (60, 55)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn lower_priority_goes_before_older() {
    let mut state = entries(&[25, 25, 25, 25]);
    state.chunks[2].priority = Some(1);
    let result = word_builder(55).build(&state).unwrap();
    assert_eq!(ids(result.excluded()), ["e1", "e3"]);
}

#[test]
fn a_role_priority_beats_its_kinds_and_a_chunks_own_beats_both() {
    let state = MemoryState::new()
        .with_chunk(MemoryChunk::agent("u_old", Role::User, words(25)))
        .with_chunk(MemoryChunk::agent("a1", Role::Assistant, words(25)))
        .with_chunk(MemoryChunk::agent("a2", Role::Assistant, words(25)))
        .with_chunk(MemoryChunk::agent("u_new", Role::User, words(5)));
    let excluded = |builder: &ContextBuilder, state: &MemoryState| {
        ids(builder.build(state).unwrap().excluded())
            .into_iter()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let mut builder = word_builder(60);
    assert_eq!(
        excluded(&builder, &state),
        ["a1"],
        "user 90 over assistant 70"
    );
    builder.policy_mut().set_priority(ChunkKind::Agent, 50);
    assert_eq!(
        excluded(&builder, &state),
        ["u_old"],
        "one priority: oldest first"
    );
    builder.policy_mut().set_priority(Role::User, 95);
    assert_eq!(
        excluded(&builder, &state),
        ["a1"],
        "the role's beats the kind's"
    );
    let mut own = state.clone();
    own.chunks[0].priority = Some(1);
    assert_eq!(
        excluded(&builder, &own),
        ["u_old"],
        "the chunk's own beats both"
    );
}

#[test]
fn low_water_trims_below_the_budget() {
    let mut builder = word_builder(100);
    builder.policy_mut().low_water = 0.6;
    let result = builder.build(&entries(&[25, 25, 25, 25, 25])).unwrap();
    assert!(result.token_count <= 60, "{}", result.token_count);
    assert_eq!(ids(result.included()), ["e4", "e5"]);
}

fn big_tool_session(output: &str) -> MemoryState {
    MemoryState::new()
        .with_chunk(MemoryChunk::agent("u1", Role::User, "Run the test suite."))
        .with_chunk(
            MemoryChunk::new("w1", ChunkKind::Workflow)
                .with_tool("bash")
                .with_call_id("k1")
                .with_text("cargo test"),
        )
        .with_chunk(
            MemoryChunk::new("r1", ChunkKind::Environment)
                .with_tool("bash")
                .with_call_id("k1")
                .with_text(output),
        )
        .with_chunk(MemoryChunk::agent("a1", Role::Assistant, "One test fails."))
}

#[test]
fn a_two_megabyte_tool_output_is_cut_to_its_cap_and_nothing_else_is_lost() {
    let mut output: String = (0..100_000)
        .map(|i| format!("test case_{i} ... ok\n"))
        .collect();
    output.push_str("test result: FAILED. 1 failed; panicked at src/lib.rs:42");
    assert!(output.len() > 1_900_000);
    let state = big_tool_session(&output);
    let result = ContextBuilder::new().build(&state).unwrap();
    assert_eq!(ids(result.included()), ["u1", "w1", "r1", "a1"]);
    assert_within_budget(&result);
    assert_recount(&result, Encoding::O200kBase);
    let truncated = cuts(&result);
    let [cut] = truncated.as_slice() else {
        panic!("{:?}", cuts(&result))
    };
    assert_eq!(cut.id, "r1");
    assert_eq!(cut.cap, 8_192);
    assert!(
        cut.tokens_after <= 8_192,
        "the default cap bounds the whole chunk: {}",
        cut.tokens_after
    );
    assert_caps_bound_chunks(&state, &result, Encoding::O200kBase);
    let content: String = result.messages.iter().map(|m| m.content.as_str()).collect();
    assert!(
        content.contains("panicked at src/lib.rs:42\n</tool_result>"),
        "the tail is kept"
    );
    assert!(content.contains("test case_0 ... ok"), "so is the head");
    assert!(content.contains(" tokens cut …]"));
}

/// `--cap tool_result=300` once reported `tokens_after: 330`: the cap
/// counted the body, the report the rendered chunk.
#[test]
fn a_cap_bounds_the_rendered_chunk_tag_and_marker_included() {
    let output = "line of output\n".repeat(400);
    let state = big_tool_session(&output);
    for escape in [EscapeMode::Structural, EscapeMode::Xml] {
        for cap in [MIN_CAP, 65, 100, 300, 1_000] {
            let mut builder = ContextBuilder::new();
            builder.escape(escape);
            builder.policy_mut().caps.set_tag("tool_result", Some(cap));
            let result = builder.build(&state).unwrap();
            let truncated = cuts(&result);
            let [cut] = truncated.as_slice() else {
                panic!("{:?}", cuts(&result))
            };
            assert_eq!((cut.id, cut.cap), ("r1", cap));
            assert!(cut.tokens_after <= cap, "{} > {cap}", cut.tokens_after);
            assert!(
                cut.tokens_after + 12 >= cap,
                "{} far below {cap}",
                cut.tokens_after
            );
            assert_caps_bound_chunks(&state, &result, Encoding::O200kBase);
        }
    }
}

#[test]
fn a_cap_below_what_the_tag_and_marker_cost_names_the_chunk_and_the_smallest_cap() {
    let mut state = big_tool_session(&"line of output\n".repeat(400));
    state.chunks[2].tool = Some(("a_tool_with_a_very_long_descriptive_name_".repeat(4)).into());
    let mut builder = ContextBuilder::new();
    builder
        .policy_mut()
        .caps
        .set_tag("tool_result", Some(MIN_CAP));
    let error = builder.build(&state).unwrap_err();
    let ErrorKind::CapTooSmall {
        location,
        asked,
        cap,
        minimum,
    } = error.kind()
    else {
        panic!("{error}")
    };
    assert_eq!((location.index, location.id.as_deref()), (2, Some("r1")));
    assert_eq!((*asked, *cap), (MIN_CAP, MIN_CAP));
    assert!(*minimum > MIN_CAP, "{minimum}");
    assert!(
        error.to_string().contains(&format!(
            "cap of {MIN_CAP} tokens on chunks[2] (id \"r1\") leaves no room"
        )),
        "{error}"
    );
    assert!(
        error.to_string().contains(&format!(
            "raise the cap on this chunk (or its tool, tag or kind) to at least {minimum}"
        )),
        "{error}"
    );
    // A cap below the floor is raised, and the error says what was asked.
    let mut below = ContextBuilder::new();
    below.policy_mut().caps.set_tag("tool_result", Some(0));
    let error = below.build(&state).unwrap_err();
    assert!(
        matches!(
            error.kind(),
            ErrorKind::CapTooSmall {
                asked: 0,
                cap: MIN_CAP,
                ..
            }
        ),
        "{error}"
    );
    assert!(
        error.to_string().starts_with(&format!(
            "cap of 0 tokens (raised to the floor of {MIN_CAP}) on chunks[2] (id \"r1\")"
        )),
        "{error}"
    );
    // The smallest workable cap works: the chunk is its tag and the marker.
    builder
        .policy_mut()
        .caps
        .set_tag("tool_result", Some(*minimum));
    let result = builder.build(&state).unwrap();
    assert_eq!(cuts(&result)[0].tokens_after, *minimum);
    assert_caps_bound_chunks(&state, &result, Encoding::O200kBase);
    builder
        .policy_mut()
        .caps
        .set_tag("tool_result", Some(minimum - 1));
    assert!(builder.build(&state).is_err());
}

#[test]
fn a_tool_cap_bounds_that_tool_only_and_yields_to_a_chunk_cap() {
    let mut state = big_tool_session(&"line of output\n".repeat(400));
    state.chunks.push(
        MemoryChunk::new("r2", ChunkKind::Environment)
            .with_tool("grep")
            .with_text("match\n".repeat(400)),
    );
    let mut builder = ContextBuilder::new();
    builder.policy_mut().caps.set_tool("bash", Some(100));
    let result = builder.build(&state).unwrap();
    let truncated = cuts(&result);
    let [cut] = truncated.as_slice() else {
        panic!("{:?}", cuts(&result))
    };
    assert_eq!((cut.id, cut.cap), ("r1", 100));
    assert!(result.warnings.is_empty(), "{:?}", result.warnings);
    assert_caps_bound_chunks(&state, &result, Encoding::O200kBase);
    // The tool's cap wins over its tag's and kind's; a chunk's over its tool's.
    builder
        .policy_mut()
        .caps
        .set_tag("tool_result", Some(200))
        .set_kind(ChunkKind::Environment, Some(300))
        .set_chunk("r1", Some(150));
    let result = builder.build(&state).unwrap();
    let caps: Vec<_> = cuts(&result).iter().map(|t| (t.id, t.cap)).collect();
    assert_eq!(caps, [("r1", 150), ("r2", 200)]);
    // Read as a command line would; a tool no chunk has caps nothing, with a warning.
    let target = builder.cap_target("tool:bsah").unwrap();
    assert_eq!(target, CapTarget::Tool("bsah".into()));
    let mut builder = ContextBuilder::new();
    builder.policy_mut().caps.set(target, Some(100));
    let result = builder.build(&state).unwrap();
    assert!(result.truncated().next().is_none());
    assert_eq!(
        result.warnings,
        ["cap on tool \"bsah\": no chunk has this tool, so it caps nothing"]
    );
    assert!(
        builder.cap_target("bash").is_err(),
        "a bare name is not a tool"
    );
}

proptest! {
    #![proptest_config(proptest_config())]

    /// Whatever the session, caps, escaping and counting (exact, the
    /// default estimate, a calibrated one): every cut chunk costs at most
    /// its cap, as reported and recounted; a cap too small for a chunk's
    /// tag and marker names the smallest cap that works for it.
    #[test]
    fn caps_bound_what_every_chunk_costs(
        state in session(16),
        repeat in 1usize..40,
        cap in 0usize..400,
        target in 0usize..4,
        xml in any::<bool>(),
        counting in 0usize..3,
        per_mille in 1_000u32..=16_000,
    ) {
        let mut state = state;
        for chunk in &mut state.chunks {
            chunk.text = chunk.text.take().map(|t| t.repeat(repeat));
        }
        let mut builder = ContextBuilder::new();
        builder.escape(if xml { EscapeMode::Xml } else { EscapeMode::Structural });
        let counter: Box<dyn TokenCounter> = match counting {
            0 => Box::new(TiktokenCounter::new(Encoding::O200kBase).unwrap()),
            1 => {
                builder.model("claude-sonnet-4");
                Box::new(Estimated::new(EstimateFactor::DEFAULT))
            }
            _ => {
                let factor = EstimateFactor::new(f64::from(per_mille) / 1000.0).unwrap();
                builder
                    .model("claude-sonnet-4")
                    .calibration(Calibration::with_floor(factor));
                Box::new(Estimated::new(factor))
            }
        };
        let target = match target {
            0 => CapTarget::Kind(ChunkKind::Environment),
            1 => CapTarget::Tag("thinking".into()),
            2 => CapTarget::Tag("user_message".into()),
            _ => CapTarget::Kind(ChunkKind::Agent),
        };
        builder.policy_mut().caps.set(target, Some(cap));
        let mut raised = 0;
        let result = loop {
            match builder.build(&state) {
                Ok(result) => break result,
                Err(error) => match error.kind() {
                    ErrorKind::CapTooSmall { location, asked, cap: applied, minimum } => {
                        prop_assert_eq!((*asked, *applied), (cap, cap.max(MIN_CAP)));
                        prop_assert!(minimum > applied);
                        let id = location.id.clone().unwrap();
                        builder.policy_mut().caps.set_chunk(&id, Some(*minimum));
                        raised += 1;
                        prop_assert!(raised <= state.chunks.len(), "{id} again");
                    }
                    other => prop_assert!(false, "unexpected error {other:?}"),
                },
            }
        };
        prop_assert_eq!(result.token_count_exact, counting == 0);
        assert_within_budget(&result);
        assert_recount_with(&result, counter.as_ref());
        assert_caps_bound_chunks_with(&state, &result, counter.as_ref());
    }
}

#[test]
fn caps_apply_by_kind_tag_and_chunk_and_spare_pinned_chunks() {
    let output = "line of output\n".repeat(400);
    let mut builder = ContextBuilder::new();
    builder.policy_mut().caps.set_tag("tool_result", Some(100));
    let result = builder.build(&big_tool_session(&output)).unwrap();
    assert_eq!(result.truncated().count(), 1);
    builder.policy_mut().caps.set_chunk("r1", None);
    assert!(
        builder
            .build(&big_tool_session(&output))
            .unwrap()
            .truncated()
            .next()
            .is_none()
    );
    let mut pinned = big_tool_session(&output);
    pinned.chunks[2].pinned = true;
    let mut capped = ContextBuilder::new();
    capped
        .policy_mut()
        .caps
        .set_kind(ChunkKind::Environment, Some(100));
    assert!(capped.build(&pinned).unwrap().truncated().next().is_none());
}

/// Old turns of thinking and tool output, then a current question.
fn turns(n: usize) -> MemoryState {
    let mut state = MemoryState::new();
    for t in 0..n {
        state = state
            .with_chunk(MemoryChunk::agent(
                format!("u{t}"),
                Role::User,
                format!("step {t}?"),
            ))
            .with_chunk(
                MemoryChunk::new(format!("t{t}"), ChunkKind::Thinking)
                    .with_text("reasoning ".repeat(60)),
            )
            .with_chunk(
                MemoryChunk::new(format!("w{t}"), ChunkKind::Workflow)
                    .with_tool("grep")
                    .with_call_id(format!("k{t}"))
                    .with_text("grep -r x"),
            )
            .with_chunk(
                MemoryChunk::new(format!("r{t}"), ChunkKind::Environment)
                    .with_tool("grep")
                    .with_call_id(format!("k{t}"))
                    .with_text("match line\n".repeat(80)),
            )
            .with_chunk(MemoryChunk::agent(
                format!("a{t}"),
                Role::Assistant,
                format!("done with {t}"),
            ));
    }
    state
}

#[test]
fn disposable_bodies_become_stubs_before_anything_is_dropped() {
    let state = turns(6);
    let full = ContextBuilder::new().build(&state).unwrap().token_count;
    let mut builder = ContextBuilder::new();
    builder.max_tokens(full - 40).policy_mut().low_water = 1.0;
    let result = builder.build(&state).unwrap();
    assert!(result.elided.is_none(), "nothing dropped");
    let stubbed: Vec<&str> = result
        .decisions
        .iter()
        .filter(|d| matches!(d.decision, Decision::Stubbed { .. }))
        .map(|d| d.id.as_str())
        .collect();
    assert_eq!(stubbed, ["t0"], "the oldest disposable body goes first");
    let all: String = result.messages.iter().map(|m| m.content.as_str()).collect();
    assert!(all.contains("<thinking id=\"t0\" elided=\""), "{all}");
    assert_recount(&result, Encoding::O200kBase);
    // Old tool results are disposable too, recent ones are not.
    builder.max_tokens(full / 2);
    let tight = builder.build(&state).unwrap();
    let stub_of = |id: &str| {
        tight
            .decisions
            .iter()
            .any(|d| d.id == id && matches!(d.decision, Decision::Stubbed { .. }))
    };
    assert!(stub_of("r0") || tight.excluded().any(|id| id == "r0"));
    assert!(
        !stub_of("r4") && !stub_of("r5"),
        "tool results of the last 3 turns keep their bodies"
    );
}

#[test]
fn the_previous_cut_is_kept_while_it_fits() {
    let mut state = turns(8);
    let mut builder = ContextBuilder::new();
    builder.max_tokens(1_000);
    let first = builder.build(&state).unwrap();
    assert!(first.elided.is_some());
    state.chunks.push(MemoryChunk::agent(
        "late",
        Role::Assistant,
        "one more thing",
    ));
    builder.previous(&first);
    let second = builder.build(&state).unwrap();
    assert_eq!(ids(second.excluded()), ids(first.excluded()), "same cut");
    let unchanged = first.messages.take(first.messages.len() - 1);
    assert_eq!(second.messages.take(unchanged.len()), unchanged);
    let stable: usize = unchanged.iter().map(|m| m.tokens).sum();
    assert!(second.stable_prefix_tokens.unwrap() >= stable);
}

struct Fixed(String);

impl Summarizer for Fixed {
    fn summarize(&self, dropped: &[&MemoryChunk], max_tokens: usize) -> Option<String> {
        assert!(!dropped.is_empty() && max_tokens > 0);
        Some(self.0.clone())
    }
}

#[test]
fn a_summary_replaces_the_marker_inside_the_budget() {
    let state = turns(8);
    let mut builder = ContextBuilder::new();
    builder
        .max_tokens(1_000)
        .policy_mut()
        .set_summarizer(Arc::new(Fixed("Steps 0-3 found x in a.rs.".into())));
    let result = builder.build(&state).unwrap();
    let all: String = result.messages.iter().map(|m| m.content.as_str()).collect();
    assert!(all.contains("<progress_summary chunks=\""), "{all}");
    assert!(all.contains("Steps 0-3 found x in a.rs."));
    assert!(!all.contains("<elided_history"));
    assert_within_budget(&result);
    assert_recount(&result, Encoding::O200kBase);
    // A summary too long for the room is shortened to fit, never over budget.
    builder
        .policy_mut()
        .set_summarizer(Arc::new(Fixed("very long summary ".repeat(5_000))));
    let long = builder.build(&state).unwrap();
    assert_within_budget(&long);
    assert_recount(&long, Encoding::O200kBase);
    let all: String = long.messages.iter().map(|m| m.content.as_str()).collect();
    assert!(
        all.contains("very long summary") && all.contains(" tokens cut …]"),
        "{all}"
    );
    let elided = long.elided.unwrap();
    assert!(elided.summary && !elided.marker);
}

#[test]
fn orphans_and_filters_have_their_reasons() {
    let state = MemoryState::new()
        .with_chunk(MemoryChunk::agent("u1", Role::User, "go"))
        .with_chunk(
            MemoryChunk::new("r1", ChunkKind::Environment)
                .with_call_id("gone")
                .with_text("x"),
        )
        .with_chunk(MemoryChunk::new("t1", ChunkKind::Thinking).with_text("hmm"));
    let result = ContextBuilder::new()
        .exclude_kinds([ChunkKind::Thinking])
        .build(&state)
        .unwrap();
    let reasons: Vec<_> = result.decisions.iter().map(|d| d.decision).collect();
    assert_eq!(
        reasons[1],
        Decision::Dropped {
            reason: DropReason::Orphan
        }
    );
    assert_eq!(
        reasons[2],
        Decision::Dropped {
            reason: DropReason::Filtered
        }
    );
}

/// Rounds every text up to a quarter of its characters: not additive at any cut.
#[derive(Debug)]
struct Quarters;

impl TokenCounter for Quarters {
    fn count(&self, text: &str) -> usize {
        text.chars().count().div_ceil(4)
    }
    fn is_exact(&self) -> bool {
        true
    }
    fn encoding_name(&self) -> &str {
        "quarters"
    }
}

#[test]
fn a_counter_that_does_not_add_up_is_counted_message_by_message() {
    let state = turns(6);
    for max_tokens in [600, 900, 5_000] {
        let mut builder = ContextBuilder::new();
        builder.counter(Arc::new(Quarters)).max_tokens(max_tokens);
        let result = builder.build(&state).unwrap();
        let recount: usize = result
            .messages
            .iter()
            .map(|m| 3 + Quarters.count(m.role.as_str()) + Quarters.count(&m.content))
            .sum::<usize>()
            + 3;
        assert_eq!(result.token_count, recount, "at {max_tokens}");
        assert_within_budget(&result);
    }
}

#[test]
fn the_most_specific_cap_wins_and_custom_renderers_keep_their_bodies() {
    let output = "line of output\n".repeat(400);
    let mut builder = ContextBuilder::new();
    builder
        .policy_mut()
        .caps
        .set_kind(ChunkKind::Environment, Some(30))
        .set_tag("tool_result", Some(200));
    let result = builder.build(&big_tool_session(&output)).unwrap();
    let Decision::Truncated { cap, .. } = result.decisions[2].decision else {
        panic!("{:?}", result.decisions[2])
    };
    assert_eq!(cap, 200, "the tag's cap beats the kind's");
    // A renderer that draws from `data` is not cut to the default cap.
    let rows: Vec<_> = (0..1_500)
        .map(|i| serde_json::json!({"row": i, "name": format!("item {i}")}))
        .collect();
    let state = MemoryState::new()
        .with_chunk(MemoryChunk::agent("u1", Role::User, "list rows"))
        .with_chunk(
            MemoryChunk::new("w1", ChunkKind::Workflow)
                .with_call_id("k")
                .with_text("rows"),
        )
        .with_chunk(
            MemoryChunk::new("r1", ChunkKind::Environment)
                .with_call_id("k")
                .with_data(serde_json::json!(rows)),
        );
    let mut custom = ContextBuilder::new();
    custom.max_tokens(1_000_000).renderers_mut().register_fn(
        &["rows"],
        Role::User,
        |chunk| chunk.kind == ChunkKind::Environment,
        |chunk, ctx, out| {
            let data = chunk
                .data
                .as_ref()
                .map(|d| d.to_string())
                .unwrap_or_default();
            ctx.write_element(out, "rows", &[("id", Some(&chunk.id))], Some(&data))
        },
    );
    let result = custom.build(&state).unwrap();
    assert!(result.truncated().next().is_none());
    assert!(
        result
            .messages
            .iter()
            .any(|m| m.content.contains("item 1499"))
    );
}

/// A renderer for `thinking` chunks that writes `<memory_note>`.
fn note_builder() -> ContextBuilder {
    let mut builder = ContextBuilder::new();
    builder.renderers_mut().register_fn(
        &["memory_note"],
        Role::Assistant,
        |chunk| chunk.kind == ChunkKind::Thinking,
        |chunk, ctx, out| {
            let attributes = [("id", Some(chunk.id.as_str()))];
            ctx.write_element(out, "memory_note", &attributes, chunk.text.as_deref())
        },
    );
    builder
}

fn noted_session() -> MemoryState {
    MemoryState::new()
        .with_chunk(MemoryChunk::new("n1", ChunkKind::Thinking).with_text("a note ".repeat(300)))
        .with_chunk(MemoryChunk::agent("u1", Role::User, "go on"))
}

#[test]
fn a_cap_on_a_custom_renderers_tag_bounds_its_chunks_and_a_kind_cap_does_not() {
    let state = noted_session();
    let mut builder = note_builder();
    builder
        .policy_mut()
        .caps
        .set_kind(ChunkKind::Thinking, Some(100));
    assert!(builder.build(&state).unwrap().truncated().next().is_none());
    builder.policy_mut().caps.set_tag("memory_note", Some(100));
    let result = builder.build(&state).unwrap();
    assert_eq!(cuts(&result)[0].id, "n1");
    assert!(cuts(&result)[0].tokens_after <= 100);
    let content = &result.messages[0].content;
    assert!(
        content.starts_with("<memory_note id=\"n1\">\na note"),
        "{content}"
    );
    assert!(content.contains(" tokens cut …]"), "{content}");
}

#[test]
fn a_cap_naming_no_tag_fails_and_one_naming_no_chunk_or_below_the_floor_warns() {
    let state = noted_session();
    let mut builder = note_builder();
    builder.policy_mut().caps.set_tag("memory_notes", Some(100));
    let error = builder.build(&state).unwrap_err();
    let ErrorKind::UnknownCapTarget { name, kinds, tags } = error.kind() else {
        panic!("{error}")
    };
    assert_eq!(name, "memory_notes");
    assert!(kinds.contains(&"environment".to_owned()));
    for tag in ["tool_result", "user_message", "memory_note"] {
        assert!(tags.contains(&tag.to_owned()), "{tag} in {tags:?}");
    }
    assert!(
        !tags.contains(&"elided_history".to_owned()),
        "markers are not chunks"
    );
    assert!(error.to_string().contains("memory_note)"), "{error}");
    // The same name, read as a command line would.
    assert!(builder.cap_target("memory_notes").is_err());
    assert_eq!(
        builder.cap_target("memory_note").unwrap(),
        CapTarget::Tag("memory_note".into())
    );

    let mut builder = note_builder();
    builder
        .policy_mut()
        .caps
        .set_chunk("n9", Some(500))
        .set_tag("memory_note", Some(0));
    let result = builder.build(&state).unwrap();
    assert_eq!(
        result.warnings,
        [
            format!(
                "cap of 0 tokens on tag memory_note is below the floor of {MIN_CAP} (a tag, its \
                 attributes and the cut marker need room): {MIN_CAP} applies"
            ),
            "cap on chunk \"n9\": no chunk has this id, so it caps nothing".to_owned(),
        ]
    );
    assert_eq!(cuts(&result)[0].cap, MIN_CAP);
    assert!(cuts(&result)[0].tokens_after <= MIN_CAP);
}

/// Records the ids it was handed; summarizes them in `words` words.
struct Recording {
    handed: std::sync::Mutex<Vec<String>>,
    words: usize,
}

impl Summarizer for Recording {
    fn summarize(&self, dropped: &[&MemoryChunk], _max_tokens: usize) -> Option<String> {
        let mut handed = self.handed.lock().unwrap();
        handed.extend(dropped.iter().map(|c| c.id.to_string()));
        Some("found x. ".repeat(self.words))
    }
}

#[test]
fn a_summarizer_reads_a_bounded_slice_of_the_newest_dropped_history() {
    let state = turns(12);
    let recording = Arc::new(Recording {
        handed: Default::default(),
        words: 5,
    });
    let mut builder = ContextBuilder::new();
    builder.max_tokens(1_000);
    builder.policy_mut().summary_input_tokens = 400;
    builder.policy_mut().set_summarizer(recording.clone());
    let result = builder.build(&state).unwrap();
    let handed = recording.handed.lock().unwrap().clone();
    assert!(!handed.is_empty());
    let tokens: usize = result
        .decisions
        .iter()
        .filter(|d| handed.contains(&d.id.to_string()))
        .map(|d| d.tokens)
        .sum();
    assert!(tokens <= 400, "{tokens} tokens handed");
    // The newest dropped chunks, in order, and every one of them dropped.
    let dropped: Vec<String> = result
        .decisions
        .iter()
        .filter(|d| {
            d.decision
                == (Decision::Dropped {
                    reason: DropReason::Budget,
                })
        })
        .map(|d| d.id.to_string())
        .collect();
    assert!(dropped.ends_with(&handed), "{handed:?} of {dropped:?}");
    assert!(result.elided.unwrap().summary);
}

struct Panics;

impl Summarizer for Panics {
    fn summarize(&self, _: &[&MemoryChunk], _: usize) -> Option<String> {
        panic!("the model is down")
    }
}

#[test]
fn a_summary_that_cannot_help_leaves_the_marker_and_says_why() {
    let state = turns(12);
    let mut builder = ContextBuilder::new();
    builder.max_tokens(1_000);
    let plain = builder.build(&state).unwrap();
    // A summarizer that panics.
    builder.policy_mut().set_summarizer(Arc::new(Panics));
    let panicked = builder.build(&state).unwrap();
    assert_eq!(panicked.messages, plain.messages);
    assert!(panicked.elided.unwrap().marker);
    assert!(
        panicked
            .warnings
            .iter()
            .any(|w| w.contains("panicked (the model is down)")),
        "{:?}",
        panicked.warnings
    );
    // A slice too small for the newest dropped chunk: not asked.
    builder.policy_mut().set_summarizer(Arc::new(Recording {
        handed: Default::default(),
        words: 5,
    }));
    builder.policy_mut().summary_input_tokens = 1;
    let unasked = builder.build(&state).unwrap();
    assert!(unasked.warnings.iter().any(|w| w.contains("not asked")));
}

/// One instruction, then one model call of two tool calls whose results
/// are logs of `lines` lines each.
fn newest_use_of(lines: usize) -> MemoryState {
    let log = |n: usize| {
        (0..n)
            .map(|i| format!("step {i}: ok\n"))
            .collect::<String>()
    };
    MemoryState::new()
        .with_system_prompt("You are a build agent.")
        .with_chunk(MemoryChunk::agent("u1", Role::User, "Build it."))
        .with_chunk(
            MemoryChunk::new("w1", ChunkKind::Workflow)
                .with_tool("make")
                .with_call_id("k1"),
        )
        .with_chunk(
            MemoryChunk::new("w2", ChunkKind::Workflow)
                .with_tool("test")
                .with_call_id("k2"),
        )
        .with_chunk(
            MemoryChunk::new("r1", ChunkKind::Environment)
                .with_call_id("k1")
                .with_text(log(lines)),
        )
        .with_chunk(
            MemoryChunk::new("r2", ChunkKind::Environment)
                .with_call_id("k2")
                .with_text(log(lines / 4)),
        )
}

#[test]
fn the_newest_results_are_cut_below_their_cap_to_fit() {
    let state = newest_use_of(6_000);
    let mut builder = ContextBuilder::new();
    builder.max_tokens(3_000).reserve_output(500);
    let result = builder.build(&state).unwrap();
    assert_within_budget(&result);
    assert_recount(&result, Encoding::O200kBase);
    assert_protected_present(&state, &result);
    // Both results share one cap, below the default 8,192 and at least 64,
    // as high as fits: the budget is nearly full.
    let caps: Vec<usize> = ["r1", "r2"]
        .iter()
        .map(|id| {
            let d = result.decisions.iter().find(|d| d.id == *id).unwrap();
            match d.decision {
                Decision::Truncated {
                    cap, tokens_after, ..
                } => {
                    assert!(tokens_after <= cap);
                    cap
                }
                other => panic!("{id}: {other:?}"),
            }
        })
        .collect();
    assert_eq!(caps[0], caps[1]);
    assert!((MIN_CAP..8_192).contains(&caps[0]), "{caps:?}");
    assert!(result.token_count > 2_500 - 200, "{}", result.token_count);
    // Too small even with both at 64 tokens: the error says so.
    builder.max_tokens(200).reserve_output(0);
    let error = builder.build(&state).unwrap_err();
    let ErrorKind::BudgetExceeded { required, .. } = error.kind() else {
        panic!("{error}")
    };
    assert!(*required > 200 && *required < 400, "{required}");
    assert!(
        error.to_string().contains("cut to 64 tokens each"),
        "{error}"
    );
}

#[test]
fn older_tool_uses_go_before_the_newest_is_cut() {
    let mut state = MemoryState::new().with_chunk(MemoryChunk::agent("u1", Role::User, "Go."));
    for n in 0..6 {
        state = state
            .with_chunk(
                MemoryChunk::new(format!("w{n}"), ChunkKind::Workflow)
                    .with_call_id(format!("k{n}")),
            )
            .with_chunk(
                MemoryChunk::new(format!("r{n}"), ChunkKind::Environment)
                    .with_call_id(format!("k{n}"))
                    .with_text("line of output\n".repeat(150)),
            );
    }
    let mut builder = ContextBuilder::new();
    builder.max_tokens(1_200);
    let result = builder.build(&state).unwrap();
    assert_within_budget(&result);
    assert_protected_present(&state, &result);
    assert!(result.truncated().next().is_none(), "{:?}", cuts(&result));
    assert!(result.excluded().any(|id| id == "r0"));
}
