//! A long autonomous run in a stored chat compacts whenever its build says
//! `compaction_due`: every build fits, every summarization request fits
//! its summarizer's window (recounted), every summary is smaller than its
//! span, the store keeps every original chunk, and the prompt cache is
//! reused at least as well as by the same run without compaction. Then
//! compactions are nodes like any other: a restore before one gives the
//! uncompacted prompt back, and a fork keeps it.

use std::sync::Arc;

use crate::common::temp::TempDir;
use crate::compaction::recount;
use crate::session_gen::{LoopShape, agent_loop};
use agent_context::budget::CompactAt;
use agent_context::command::chat_compact::first_lines;
use agent_context::compaction::{CompactionOptions, CompactionPlan};
use agent_context::store::{self, Store};
use agent_context::{BuildResult, ContextBuilder, ContextEngine, MemoryChunk};
use serde_json::Value;

const STEPS: usize = 1_500;
const MAX_TOKENS: usize = 32_000;
const RESERVE: usize = 1_000;
/// The summarizer's window, and what the summary may take of it.
const SUMMARIZER_WINDOW: usize = 24_000;
const SUMMARY_TOKENS: usize = 1_500;

fn builder(trigger: Option<f64>) -> ContextBuilder {
    let mut builder = ContextBuilder::new();
    builder
        .model("gpt-4o")
        .max_tokens(MAX_TOKENS)
        .reserve_output(RESERVE);
    builder.policy_mut().compact_at = trigger.map(CompactAt::Fraction);
    builder
}

fn options() -> CompactionOptions {
    let mut options = CompactionOptions::default();
    options.summarizer_max_tokens = Some(SUMMARIZER_WINDOW);
    options.summary_tokens = Some(SUMMARY_TOKENS);
    options
}

/// The share of `result`'s prompt the previous prompt's prefix covers.
fn reuse(result: &BuildResult) -> f64 {
    result.stable_prefix_tokens.unwrap_or(0) as f64 / result.token_count as f64
}

/// What a run did.
#[derive(Debug, Default)]
struct Run {
    builds: usize,
    reuse: Vec<f64>,
    compactions: usize,
}

/// Runs the loop's steps in a stored chat at `location`, saving and
/// building after each (a fresh engine every 100 steps, as a new process
/// would), compacting when due if `trigger` is set.
fn run(location: &str, trigger: Option<f64>, steps: &[Vec<MemoryChunk>]) -> Run {
    let open = || -> Arc<dyn Store> { store::open(location, false).unwrap() };
    let builder = builder(trigger);
    let mut engine = ContextEngine::open(open(), "loop", builder.clone()).unwrap();
    let mut run = Run::default();
    for (n, step) in steps.iter().enumerate() {
        if n % 100 == 99 {
            engine = ContextEngine::open(open(), "loop", builder.clone()).unwrap();
        }
        engine.extend(step.iter().cloned()).unwrap();
        engine.save().unwrap();
        let result = engine.build().unwrap_or_else(|e| panic!("step {n}: {e}"));
        assert!(
            result.token_count <= MAX_TOKENS - RESERVE,
            "step {n} overflows"
        );
        assert!(result.token_count_exact);
        run.builds += 1;
        if n > 0 {
            run.reuse.push(reuse(&result));
        }
        if result.compaction_due == Some(true) {
            run.compactions += usize::from(compact(&mut engine, n));
        }
    }
    run
}

/// Plans and applies a compaction with the stand-in summarizer, checking
/// the request against its window and the summary against its span.
fn compact(engine: &mut ContextEngine, step: usize) -> bool {
    let CompactionPlan::Ready(plan) = engine.plan_compaction(&options()).unwrap() else {
        return false;
    };
    let recount = recount(&plan);
    assert_eq!(
        plan.request_tokens, recount,
        "step {step}: the request's count"
    );
    assert!(
        recount <= SUMMARIZER_WINDOW - SUMMARY_TOKENS,
        "step {step}: {recount}"
    );
    let applied = engine
        .apply_compaction(&plan.plan, first_lines(&plan))
        .unwrap_or_else(|e| panic!("step {step}: {e}"));
    assert!(applied.tokens_after < applied.tokens_before, "step {step}");
    assert_eq!(applied.tokens_before, plan.folded.tokens);
    true
}

#[test]
fn a_long_run_compacts_when_due_and_keeps_every_original() {
    let shape = LoopShape {
        result_bytes: (40, 12_000),
        ..LoopShape::new(STEPS)
    };
    let looped = agent_loop(7, &shape);
    let dir = TempDir::new("compaction-loop");
    let locations = [true, false].map(|compacting| {
        let location = dir.join(&format!("{compacting}.db")).display().to_string();
        let store = store::open(&location, true).unwrap();
        let mut engine = ContextEngine::open(store, "loop", builder(None)).unwrap();
        engine.set_system_prompt(looped.opening.system_prompt.clone());
        engine
            .extend(looped.opening.chunks.iter().cloned())
            .unwrap();
        engine.save().unwrap();
        location
    });
    let compacted = run(&locations[0], Some(0.9), &looped.steps);
    let plain = run(&locations[1], None, &looped.steps);
    assert_eq!(compacted.builds, STEPS);
    assert!(compacted.compactions >= 10, "{compacted:?}");
    let mean = |run: &Run| run.reuse.iter().sum::<f64>() / run.reuse.len() as f64;
    assert!(
        mean(&compacted) >= mean(&plain),
        "reuse {} with compaction, {} without",
        mean(&compacted),
        mean(&plain)
    );
    // The store keeps every original chunk beside the compactions.
    let mut engine = ContextEngine::open(
        store::open(&locations[0], false).unwrap(),
        "loop",
        builder(None),
    )
    .unwrap();
    let mut exported = Vec::new();
    engine.export(&mut exported).unwrap();
    let exported: Value = serde_json::from_slice(&exported).unwrap();
    let kinds: Vec<&str> = exported["chunks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["kind"].as_str().unwrap())
        .collect();
    let originals = looped.opening.chunks.len() + looped.chunks().count();
    assert_eq!(
        kinds.iter().filter(|k| **k != "compaction").count(),
        originals
    );
    assert_eq!(
        kinds.iter().filter(|k| **k == "compaction").count(),
        compacted.compactions
    );
    let breaks = |run: &Run| run.reuse.iter().filter(|r| **r < 0.5).count();
    println!(
        "{} compactions; reuse {:.3} with, {:.3} without; breaks {} with, {} without",
        compacted.compactions,
        mean(&compacted),
        mean(&plain),
        breaks(&compacted),
        breaks(&plain)
    );
}

#[test]
fn a_compacted_chat_built_in_fresh_processes_returns_the_sessions_prompts() {
    // A session compacts when due; the stored chat gets the same chunks,
    // compactions included, and a fresh engine builds it after every step:
    // the same prompts, byte for byte, reading back only to the compaction.
    let shape = LoopShape {
        result_bytes: (40, 6_000),
        ..LoopShape::new(300)
    };
    let looped = agent_loop(17, &shape);
    let dir = TempDir::new("compaction-fresh");
    let location = dir.join("chat.db").display().to_string();
    let open = || {
        ContextEngine::open(
            store::open(&location, true).unwrap(),
            "loop",
            builder(Some(0.9)),
        )
    };
    let mut engine = open().unwrap();
    engine.set_system_prompt(looped.opening.system_prompt.clone());
    engine
        .extend(looped.opening.chunks.iter().cloned())
        .unwrap();
    engine.save().unwrap();
    let mut session =
        agent_context::ContextSession::new(builder(Some(0.9)), looped.opening.clone()).unwrap();
    let (mut compactions, mut unread) = (0, 0);
    for (n, step) in looped.steps.iter().enumerate() {
        session.extend(step.iter().cloned()).unwrap();
        let mut engine = open().unwrap();
        engine.extend(step.iter().cloned()).unwrap();
        engine.save().unwrap();
        let own = session.build().unwrap();
        let stored = open().unwrap().build().unwrap();
        assert_eq!(stored.messages, own.messages, "step {n}");
        assert_eq!(
            stored.stable_prefix_tokens, own.stable_prefix_tokens,
            "step {n}"
        );
        assert_eq!(stored.compaction, own.compaction, "step {n}");
        unread = unread.max(stored.unread_chunks);
        if own.compaction_due == Some(true) {
            let CompactionPlan::Ready(plan) = session.plan_compaction(&options()).unwrap() else {
                continue;
            };
            session
                .apply_compaction(&plan.plan, first_lines(&plan))
                .unwrap();
            let chunk = session.state().chunks.last().unwrap().clone();
            let mut engine = open().unwrap();
            engine.push(chunk).unwrap();
            engine.save().unwrap();
            compactions += 1;
        }
    }
    assert!(compactions >= 3, "{compactions}");
    assert!(
        unread > 100,
        "the builds read back only to the compaction: {unread}"
    );
}
