//! Whether a warm turn costs the same late in a long session as early:
//! the turns of the second and of the fourth quarter of a session that
//! grows to about a million tokens, with and without `context_management`.
//!
//! `cargo bench --features bench --bench warm_quarters`. The sessions come
//! from the deterministic generator (`examples/support/session_gen.rs`):
//! - `drawn`, an agent loop of [`STEPS`] model calls, each with one to
//!   three tool calls whose results are about 3 KB, so every quarter adds
//!   the same kind of text (the fourth quarter's is 2.6% longer and counts
//!   8.8% more tokens; see docs/benchmarks.md);
//! - `repeated`, the same loop with the second quarter's steps again in
//!   every quarter (ids renamed), so that both quarters add the very same
//!   text and only the session's size differs;
//! - `chat`, the `session` bench's chat of [`CHAT_TURNS`] turns (a user
//!   request, thinking, tool calls and their results, an answer), a turn
//!   at a time.
//!
//! A session builds each at 128k one step at a time, as a live loop does;
//! each sample forks the session at the start of a quarter (untimed) and
//! times every step of the quarter, pushed and built. After criterion's
//! report, rounds that run every quarter in turn give each quarter's
//! median turn and median total, and their ratios.
//!
//! With `AGENT_CONTEXT_QUARTER=2` (or `4`) in the environment, it runs that
//! quarter's turns once instead, inside [`one_quarter`], for an instruction
//! count under callgrind (`AGENT_CONTEXT_EDITS=1` for `clear_tool_uses`,
//! `AGENT_CONTEXT_REPEATED=1` for the `repeated` loop,
//! `AGENT_CONTEXT_CHAT=1` for the `chat`; the command is in
//! docs/benchmarks.md). A fork runs the quarter first,
//! so that what loads once per process falls outside the count.

#[path = "../examples/support/session_gen.rs"]
mod session_gen;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use agent_context::budget::ContextManagement;
use agent_context::{ContextBuilder, ContextSession, MemoryChunk};
use criterion::{Criterion, SamplingMode, Throughput};
use session_gen::{AgentLoop, LoopShape, agent_loop, chat};

/// Steps of the agent loop: about 1.0M tokens in all.
const STEPS: usize = 600;
/// Turns of the chat: about 1.0M tokens in all, as the `session` bench's
/// million.
const CHAT_TURNS: usize = 900;
const BUDGET: usize = 128_000;

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
    turns_of(&mut session, steps);
    session
}

/// The two variants: without edits, and with `clear_tool_uses`.
const VARIANTS: [(&str, bool); 2] = [("plain", false), ("clear-tool-uses", true)];

/// The three sessions: the agent loop's steps as drawn, the second
/// quarter's steps in every quarter, and the chat.
const TEXTS: [&str; 3] = ["drawn", "repeated", "chat"];

/// Each quarter's turns, and its totals, by text, variant and quarter.
type Timed<'a> = BTreeMap<(&'a str, &'a str, usize), (Vec<Duration>, Vec<Duration>)>;

/// Interleaved rounds of the table after criterion's report.
const ROUNDS: usize = 15;

/// A variant's session at the start of a quarter, and the quarter's steps.
struct Quarter<'a> {
    text: &'static str,
    variant: &'static str,
    quarter: usize,
    base: ContextSession,
    steps: &'a [Vec<MemoryChunk>],
}

impl Quarter<'_> {
    /// Each turn of the quarter on a fork of its session (forked untimed):
    /// the step pushed and built.
    fn turns(&self) -> Vec<Duration> {
        let mut session = self.base.clone();
        // A fork has no spare room: the quarter's chunks would grow it.
        session.reserve(chunks_in(self.steps));
        let mut turns = Vec::with_capacity(self.steps.len());
        for step in self.steps {
            let started = Instant::now();
            session.extend(step.iter().cloned()).expect("valid chunks");
            session.build().expect("the loop fits");
            turns.push(started.elapsed());
        }
        turns
    }
}

/// The sessions at the start of the second and the fourth quarter of each
/// loop and variant.
fn quarters(loops: &[AgentLoop; 3]) -> Vec<Quarter<'_>> {
    let mut quarters = Vec::new();
    for (text, agent_loop) in TEXTS.into_iter().zip(loops) {
        let (steps, opening) = (&agent_loop.steps, &agent_loop.opening);
        let length = steps.len() / 4;
        for (variant, edits) in VARIANTS {
            for quarter in [2, 4] {
                let start = (quarter - 1) * length;
                quarters.push(Quarter {
                    text,
                    variant,
                    quarter,
                    base: session_at(&steps[..start], edits, opening),
                    steps: &steps[start..start + length],
                });
            }
        }
    }
    quarters
}

fn criterion_quarters(c: &mut Criterion, quarters: &[Quarter<'_>]) {
    let mut group = c.benchmark_group("warm-quarters");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_millis(100))
        .measurement_time(Duration::from_secs(3));
    for quarter in quarters {
        group.throughput(Throughput::Elements(quarter.steps.len() as u64));
        let name = format!("{}/{}/q{}", quarter.text, quarter.variant, quarter.quarter);
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| quarter.turns().iter().sum::<Duration>())
                    .sum()
            })
        });
    }
    group.finish();
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort_unstable();
    values[values.len() / 2]
}

fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}

/// Rounds that run every quarter once, in turn, so a noisy moment of the
/// machine falls on all of them: each quarter's median turn, and the median
/// of its totals.
fn interleaved(quarters: &[Quarter<'_>]) {
    let mut turns = Timed::new();
    for _ in 0..ROUNDS {
        for quarter in quarters {
            let timed = quarter.turns();
            let key = (quarter.text, quarter.variant, quarter.quarter);
            let entry = turns.entry(key).or_default();
            entry.1.push(timed.iter().sum());
            entry.0.extend(timed);
        }
    }
    println!("\n{ROUNDS} interleaved rounds:\n");
    println!(
        "| text | variant | median turn, Q2 | Q4 | Q4 / Q2 | median quarter, Q2 | Q4 | Q4 / Q2 |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|");
    let variants = TEXTS.iter().flat_map(|t| VARIANTS.map(|(v, _)| (*t, v)));
    for (text, variant) in variants {
        let (q2, q4) = (&(text, variant, 2), &(text, variant, 4));
        let (Some(q2), Some(q4)) = (turns.get(q2), turns.get(q4)) else {
            continue;
        };
        let (turn2, turn4) = (median(q2.0.clone()), median(q4.0.clone()));
        let (total2, total4) = (median(q2.1.clone()), median(q4.1.clone()));
        println!(
            "| {text} | {variant} | {:.1} µs | {:.1} µs | {:.2} | {:.1} ms | {:.1} ms | {:.2} |",
            micros(turn2),
            micros(turn4),
            micros(turn4) / micros(turn2),
            micros(total2) / 1e3,
            micros(total4) / 1e3,
            micros(total4) / micros(total2)
        );
    }
}

/// The chunks of `steps`.
fn chunks_in(steps: &[Vec<MemoryChunk>]) -> usize {
    steps.iter().map(Vec::len).sum()
}

/// The turns of `steps` on `session`, once.
fn turns_of(session: &mut ContextSession, steps: &[Vec<MemoryChunk>]) {
    for step in steps {
        session.extend(step.iter().cloned()).expect("valid chunks");
        session.build().expect("the loop fits");
    }
}

/// [`turns_of`], where callgrind counts it.
#[inline(never)]
fn one_quarter(session: &mut ContextSession, steps: &[Vec<MemoryChunk>]) {
    turns_of(session, steps);
}

/// The quarter `AGENT_CONTEXT_QUARTER` names, run once (see the module
/// docs); `false` when it names none.
fn quarter_once(loops: &[AgentLoop; 3]) -> bool {
    let quarter = std::env::var("AGENT_CONTEXT_QUARTER").ok();
    let Some(quarter) = quarter.and_then(|q| q.parse::<usize>().ok()) else {
        return false;
    };
    let edits = std::env::var_os("AGENT_CONTEXT_EDITS").is_some();
    let named = |variable: &str| std::env::var_os(variable).is_some();
    let agent_loop = match (named("AGENT_CONTEXT_REPEATED"), named("AGENT_CONTEXT_CHAT")) {
        (_, true) => &loops[2],
        (true, false) => &loops[1],
        (false, false) => &loops[0],
    };
    let length = agent_loop.steps.len() / 4;
    let start = (quarter.clamp(1, 4) - 1) * length;
    let base = session_at(&agent_loop.steps[..start], edits, &agent_loop.opening);
    let quarter = &agent_loop.steps[start..start + length];
    turns_of(&mut base.clone(), quarter);
    let mut session = base.clone();
    // As `Quarter::turns` does.
    session.reserve(chunks_in(quarter));
    one_quarter(&mut session, quarter);
    true
}

fn main() {
    let shape = LoopShape {
        result_bytes: (3_000, 3_001),
        ..LoopShape::new(STEPS)
    };
    let drawn = agent_loop(43, &shape);
    let repeated = drawn.repeating(STEPS / 4..STEPS / 2);
    let loops = [drawn, repeated, chat(1, CHAT_TURNS, 1)];
    if quarter_once(&loops) {
        return;
    }
    let quarters = quarters(&loops);
    let mut criterion = Criterion::default().configure_from_args();
    criterion_quarters(&mut criterion, &quarters);
    criterion.final_summary();
    interleaved(&quarters);
}
