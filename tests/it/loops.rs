//! Autonomous agent loops: one instruction, then hundreds of model calls
//! with tool calls and results and no new user message. Every build fits
//! the budget, keeps the latest user message and the newest tool use whole,
//! never splits a tool call from its results, and a session builds what a
//! one-shot build of the same memory does; and the prompt's prefix changes
//! only when the window refills.

use crate::common;
use crate::common::*;
use crate::session_gen::{AgentLoop, LoopShape, agent_loop};
use agent_context::tokens::Encoding;
use agent_context::{BuildResult, ContextBuilder, ContextSession, MemoryState};
use proptest::prelude::*;

/// The budgets every loop is built at (`max_tokens`), each with [`RESERVE`]
/// held back for the reply.
pub(crate) const BUDGETS: [usize; 3] = [12_000, 32_000, 128_000];
pub(crate) const RESERVE: usize = 1_000;

pub(crate) fn builder(max_tokens: usize) -> ContextBuilder {
    crate::common::gpt_4o(max_tokens, RESERVE)
}

/// The one-shot build of `state` given `previous`, as a session's turn is.
fn one_shot(
    builder: &ContextBuilder,
    state: &MemoryState,
    previous: Option<&BuildResult>,
) -> BuildResult {
    let mut builder = builder.clone();
    if let Some(previous) = previous {
        builder.previous(previous);
    }
    builder
        .build(state)
        .unwrap_or_else(|e| panic!("one-shot build of {} chunks: {e}", state.chunks.len()))
}

/// What every build of a loop promises, but the recount (see
/// [`assert_loop_build_recounted`]): within the budget, units whole and no
/// orphan, the latest user message and the newest tool use (and pinned
/// and critical chunks) present and never stubbed, one elision marker at
/// most.
fn assert_loop_build(state: &MemoryState, result: &BuildResult) {
    assert_within_budget(result);
    assert_units_whole(state, result);
    assert_protected_present(state, result);
    let markers: usize = result
        .messages
        .iter()
        .map(|m| m.content.matches("<elided_history ").count())
        .sum();
    let reported = result.elided.as_ref().is_some_and(|e| e.marker);
    assert_eq!(markers, usize::from(reported), "elision markers");
}

/// [`assert_loop_build`], and `token_count` equals an independent recount.
fn assert_loop_build_recounted(state: &MemoryState, result: &BuildResult) {
    assert_loop_build(state, result);
    assert_recount(result, Encoding::O200kBase);
}

/// Builds that trimmed whose session build is compared with the one-shot
/// build, per run (the first ones; trimming is where the cut moves).
const TRIMS_COMPARED: usize = 4;

/// Pushes the loop's steps one by one into a session, building after every
/// `every` steps (and after the last), and checks each build. The builds
/// after `compared` steps (a count of steps pushed), and the first
/// [`TRIMS_COMPARED`] that trimmed, are recounted and must equal the
/// one-shot build given the session's previous build (a one-shot build
/// costs the whole loop, so not every build is compared). Returns every
/// build with the number of steps it holds.
fn session_builds(
    max_tokens: usize,
    agent_loop: &AgentLoop,
    every: usize,
    compared: impl Fn(usize) -> bool,
) -> Vec<(usize, BuildResult)> {
    let builder = builder(max_tokens);
    let mut session = ContextSession::new(builder.clone(), agent_loop.opening.clone()).unwrap();
    let mut builds: Vec<(usize, BuildResult)> = Vec::new();
    let mut trims_compared = 0;
    let steps = agent_loop.steps.len();
    for (index, step) in agent_loop.steps.iter().enumerate() {
        session.extend(step.iter().cloned()).unwrap();
        let pushed = index + 1;
        if !(pushed.is_multiple_of(every) || pushed == steps) {
            continue;
        }
        let result = session
            .build()
            .unwrap_or_else(|e| panic!("step {pushed} of {steps} at {max_tokens} max_tokens: {e}"));
        assert_loop_build(session.state(), &result);
        let trimmed = result.trim_target.is_some() && trims_compared < TRIMS_COMPARED;
        if compared(pushed) || trimmed {
            trims_compared += usize::from(trimmed);
            assert_loop_build_recounted(session.state(), &result);
            let previous = builds.last().map(|(_, b)| b);
            let expected = one_shot(&builder, session.state(), previous);
            assert_eq!(
                result, expected,
                "step {pushed} at {max_tokens} max_tokens: session vs one-shot"
            );
        }
        builds.push((pushed, result));
    }
    builds
}

/// Proptest settings for loops, each case hundreds of builds at three
/// budgets: 5 cases, or `PROPTEST_CASES` for a longer hunt.
fn config() -> ProptestConfig {
    common::proptest_config_with(5)
}

/// A seed and the shape of a loop of 50 to 400 steps with results of a few
/// bytes to ~20 KB (or, in heavy loops, 4 KB to 20 KB, so that at 12k the
/// newest tool use often has to be cut to fit); some with a second user
/// message mid-loop, a pinned note, a `critical` result.
fn seeded_loop() -> impl Strategy<Value = (u64, LoopShape)> {
    let at = || prop::option::weighted(0.5, 0.0f64..1.0);
    (
        any::<u64>(),
        50usize..=400,
        prop::bool::weighted(0.3),
        prop::option::weighted(0.3, 0.1f64..0.9),
        at(),
        at(),
    )
        .prop_map(|(seed, steps, heavy, second_user, pinned, critical)| {
            let step = |at: Option<f64>| at.map(|f| (f * steps as f64) as usize);
            let shape = LoopShape {
                result_bytes: if heavy { (4_000, 20_000) } else { (4, 20_000) },
                second_user_at: step(second_user),
                pinned_at: step(pinned),
                critical_at: step(critical),
                ..LoopShape::new(steps)
            };
            (seed, shape)
        })
}

proptest! {
    #![proptest_config(config())]

    /// One-shot builds of the loop cut at a quarter, half, three quarters
    /// and all of its steps, and a session built after every step, at each
    /// budget: every build succeeds and keeps the promises; the session's
    /// builds (the last, three spread over the loop, and the first that
    /// trimmed, up to four) equal the one-shot builds.
    #[test]
    fn every_build_of_an_agent_loop_fits_and_keeps_the_newest_tool_use(
        (seed, shape) in seeded_loop(),
    ) {
        let agent_loop = agent_loop(seed, &shape);
        let steps = shape.steps;
        let spread = (steps / 4).max(1);
        for max_tokens in BUDGETS {
            for prefix in [steps / 4, steps / 2, steps * 3 / 4, steps] {
                let state = agent_loop.state(prefix);
                let result = one_shot(&builder(max_tokens), &state, None);
                assert_loop_build_recounted(&state, &result);
            }
            let builds = session_builds(max_tokens, &agent_loop, 1, |pushed| {
                pushed.is_multiple_of(spread) || pushed == steps
            });
            prop_assert_eq!(builds.len(), steps);
        }
    }
}

#[test]
fn a_thousand_step_loop_never_fails_at_8k() {
    let shape = LoopShape {
        result_bytes: (1_000, 6_000),
        ..LoopShape::new(1_000)
    };
    let agent_loop = agent_loop(11, &shape);
    let builds = session_builds(8_000, &agent_loop, 1, |pushed| pushed.is_multiple_of(250));
    assert_eq!(builds.len(), 1_000);
    let (_, last) = builds.last().unwrap();
    assert!(
        last.excluded().count() > 3_000,
        "most of the loop is history that went: {} excluded",
        last.excluded().count()
    );
}

#[test]
fn a_loop_with_a_user_message_every_five_steps_never_fails_at_8k() {
    let shape = LoopShape {
        result_bytes: (1_000, 6_000),
        user_every: Some(5),
        ..LoopShape::new(200)
    };
    let agent_loop = agent_loop(12, &shape);
    let builds = session_builds(8_000, &agent_loop, 1, |pushed| pushed.is_multiple_of(50));
    assert_eq!(builds.len(), 200);
    // The latest user message stays; the instruction and the older ones
    // are history like any other.
    let (_, last) = builds.last().unwrap();
    assert!(last.included().any(|id| id.as_str() == "s195-user"));
    assert!(!last.included().any(|id| id.as_str() == "instruction"));
}

/// Whether `new` starts with the whole of `old` but for its last message,
/// which may have grown: every other message of `old` as it was, then a
/// message of the same role whose content starts with the last one's.
fn keeps_prefix(old: &BuildResult, new: &BuildResult) -> bool {
    let Some(last) = old.messages.last() else {
        return true;
    };
    let before_last = old.messages.len() - 1;
    new.messages.starts_with(&old.messages.take(before_last))
        && new.messages.get(before_last).is_some_and(|m| {
            m.role == last.role && m.content.as_str().starts_with(last.content.as_str())
        })
}

#[test]
fn a_loop_changes_its_prompt_prefix_only_when_the_window_refills() {
    // Results of a few bytes to 4 KB: three steps add ~1,500 tokens, well
    // under the 6,200 a trim to the low-water mark makes room for, so the
    // bound below is far from the number of builds.
    let shape = LoopShape {
        result_bytes: (4, 4_000),
        ..LoopShape::new(300)
    };
    let agent_loop = agent_loop(21, &shape);
    let everything = builder(100_000_000).build(&agent_loop.state(300)).unwrap();
    assert!(everything.excluded().next().is_none());
    let history: usize = everything.decisions.iter().map(|d| d.tokens).sum();

    let builds = session_builds(32_000, &agent_loop, 3, |pushed| pushed.is_multiple_of(60));
    let budget = builds[0].1.budget;
    let mut changes = 0;
    for pair in builds.windows(2) {
        let ((_, old), (pushed, new)) = (&pair[0], &pair[1]);
        // The report agrees: a kept prefix is at least every message but
        // the last; a changed one at most that.
        let before_last: usize = old.messages.iter().map(|m| m.tokens).sum::<usize>()
            - old.messages.last().unwrap().tokens;
        let stable = new
            .stable_prefix_tokens
            .expect("a session reports its prefix");
        if keeps_prefix(old, new) {
            assert!(
                stable >= before_last,
                "step {pushed}: {stable} < {before_last}"
            );
        } else {
            changes += 1;
            assert!(
                stable <= before_last,
                "step {pushed}: {stable} > {before_last}"
            );
            assert!(
                new.trim_target.is_some(),
                "step {pushed}: the prefix changed but the build did not trim"
            );
        }
    }
    let refills = history as f64 / (0.2 * budget as f64);
    let bound = 1.5 * refills + 3.0;
    println!(
        "{} builds, {history} history tokens, {refills:.1} refills of a {budget}-token budget: \
         prefix changed {changes} times (bound {bound:.1})",
        builds.len()
    );
    assert!(changes >= 1, "the window never refilled");
    assert!(
        changes as f64 <= bound,
        "prefix changed {changes} times, over {bound:.1}"
    );
}
