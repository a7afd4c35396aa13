//! Whether a warm turn costs the same late in a long session as early:
//! the turns of the second and of the fourth quarter of an agent loop that
//! grows to about a million tokens, with and without `context_management`.
//!
//! `cargo bench --features bench --bench warm_quarters`. The loop comes from
//! the deterministic generator (`examples/support/session_gen.rs`):
//! [`STEPS`] model calls, each with one to three tool calls whose results
//! are about 3 KB, so every quarter adds the same kind of text. A session
//! builds it at 128k one step at a time, as a live loop does; each sample
//! forks the session at the start of a quarter (untimed) and times every
//! step of the quarter, pushed and built. After criterion's report, a
//! table gives the median turn of each quarter and their ratio.

#[path = "../examples/support/session_gen.rs"]
mod session_gen;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use agent_context::budget::ContextManagement;
use agent_context::{ContextBuilder, ContextSession, MemoryChunk};
use criterion::{Criterion, SamplingMode, Throughput};
use session_gen::{LoopShape, agent_loop};

/// Steps of the loop: about 1.0M tokens in all.
const STEPS: usize = 600;
const BUDGET: usize = 128_000;
const QUARTER: usize = STEPS / 4;

/// `clear_tool_uses` with Anthropic's defaults: past 100,000 input tokens,
/// every tool use but the newest three is cleared.
const EDITS: &str = r#"{"edits": [{"type": "clear_tool_uses_20250919"}]}"#;

fn builder(edits: bool) -> ContextBuilder {
    let mut builder = ContextBuilder::new();
    builder.model("gpt-4o").max_tokens(BUDGET);
    if edits {
        let management: ContextManagement = serde_json::from_str(EDITS).expect("valid edits");
        builder.policy_mut().context_management = Some(management);
    }
    builder
}

/// The session after the first `steps` steps, built after each.
fn session_at(
    steps: &[Vec<MemoryChunk>],
    edits: bool,
    opening: &agent_context::MemoryState,
) -> ContextSession {
    let mut session =
        ContextSession::new(builder(edits), opening.clone()).expect("the opening builds");
    for step in steps {
        session.extend(step.iter().cloned()).expect("valid chunks");
        session.build().expect("the loop fits");
    }
    session
}

/// Each turn's time, by variant and quarter.
type Turns = BTreeMap<(&'static str, usize), Vec<Duration>>;

fn quarters(c: &mut Criterion, turns: &RefCell<Turns>) {
    let shape = LoopShape {
        result_bytes: (3_000, 3_001),
        ..LoopShape::new(STEPS)
    };
    let agent_loop = agent_loop(43, &shape);
    let mut group = c.benchmark_group("warm-quarters");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_millis(100))
        .measurement_time(Duration::from_secs(3))
        .throughput(Throughput::Elements(QUARTER as u64));
    for (variant, edits) in [("plain", false), ("clear-tool-uses", true)] {
        for quarter in [2, 4] {
            let start = (quarter - 1) * QUARTER;
            let base = session_at(&agent_loop.steps[..start], edits, &agent_loop.opening);
            let steps = &agent_loop.steps[start..start + QUARTER];
            group.bench_function(format!("{variant}/q{quarter}"), |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let mut session = base.clone();
                        session.reserve(QUARTER * 8);
                        for step in steps {
                            let started = Instant::now();
                            session.extend(step.iter().cloned()).expect("valid chunks");
                            session.build().expect("the loop fits");
                            let turn = started.elapsed();
                            total += turn;
                            turns
                                .borrow_mut()
                                .entry((variant, quarter))
                                .or_default()
                                .push(turn);
                        }
                    }
                    total
                })
            });
        }
    }
    group.finish();
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort_unstable();
    values[values.len() / 2]
}

fn main() {
    let turns = RefCell::new(Turns::new());
    let mut criterion = Criterion::default().configure_from_args();
    quarters(&mut criterion, &turns);
    criterion.final_summary();
    let turns = turns.into_inner();
    println!("\n| variant | median turn, Q2 | median turn, Q4 | Q4 / Q2 |");
    println!("|---|---:|---:|---:|");
    for variant in ["plain", "clear-tool-uses"] {
        let (Some(q2), Some(q4)) = (turns.get(&(variant, 2)), turns.get(&(variant, 4))) else {
            continue;
        };
        let (q2, q4) = (median(q2.clone()), median(q4.clone()));
        println!(
            "| {variant} | {:.1} µs | {:.1} µs | {:.2} |",
            q2.as_secs_f64() * 1e6,
            q4.as_secs_f64() * 1e6,
            q4.as_secs_f64() / q2.as_secs_f64()
        );
    }
}
