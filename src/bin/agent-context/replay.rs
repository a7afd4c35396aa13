//! `agent-context replay`: a recorded session built turn by turn, as an
//! agent runtime would, to choose budgets and see the cache at work.

use std::io::Write;
use std::time::Instant;

use agent_context::adapter::html::{ReplayTurn, replay_page};
use agent_context::command::{self, chat_compact};
use agent_context::compaction::{AppliedCompaction, CompactionOptions, CompactionPlan};
use agent_context::{BuildResult, ChunkKind, ContextBuilder, ContextSession, MemoryState, Role};
use serde_json::json;

use crate::Failure;
use crate::build_flags::BuildOptions;
use crate::input::{SessionInput, read_session};

#[derive(clap::Args)]
pub(crate) struct ReplayArgs {
    /// Session JSON file, or `-` (the default) for standard input.
    #[arg(default_value = "-")]
    file: String,
    #[command(flatten)]
    options: BuildOptions,
    #[command(flatten)]
    input: SessionInput,
    /// End a turn every N chunks instead of at each assistant chunk.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    every: Option<u64>,
    /// Rebuild cold each turn (render and count everything) for comparison.
    #[arg(long)]
    no_cache: bool,
    /// Compact whenever a turn's build says `compaction_due` (set a trigger
    /// with --compact-at or a compact_20260112 edit), with this stand-in
    /// summarizer: `first-lines` writes the opening line of each folded
    /// chunk. A test aid to see a whole run with compactions, not a
    /// summarizer to use.
    #[arg(long, value_name = "NAME", value_parser = ["first-lines"])]
    summarizer: Option<String>,
    /// Tokens of the newest history a compaction keeps verbatim (default:
    /// a quarter of the budget).
    #[arg(long, value_name = "N", requires = "summarizer")]
    keep_tokens: Option<usize>,
    /// Also write the run as one self-contained HTML page to FILE: tokens
    /// per turn, the stable prefix, every break of it, the last window.
    #[arg(long, value_name = "FILE")]
    html: Option<std::path::PathBuf>,
}

/// One JSON line per turn, written as soon as the turn is built, then a
/// summary line. Bad input (exit 2), in any turn, is reported before the
/// first line; a turn whose protected content does not fit the budget
/// (exit 1) leaves the lines of the turns before it on stdout.
pub(crate) fn run(args: ReplayArgs) -> Result<String, Failure> {
    let recorded = read_session(&args.file, &args.input)?;
    let mut opening = recorded.clone();
    opening.chunks.clear();
    let options = args.options.to_options(None)?;
    let builder = options.policy_builder()?;
    check_cold(&builder, &recorded, &options)?;
    let mut session = ContextSession::new(builder, opening)?;

    let mut out = std::io::stdout().lock();
    let mut times = Vec::new();
    // Per turn, the tokens of what it had to count.
    let mut counted = Vec::new();
    let mut tokens_counted = 0;
    let mut turns: Vec<ReplayTurn> = Vec::new();
    let mut last: Option<BuildResult> = None;
    let total = recorded.chunks.len();
    for (index, chunk) in recorded.chunks.into_iter().enumerate() {
        let ends_turn = match args.every {
            Some(n) => (index as u64 + 1).is_multiple_of(n),
            None => chunk.kind == ChunkKind::Agent && chunk.role == Some(Role::Assistant),
        };
        session.push(chunk)?;
        if !(ends_turn || index + 1 == total) {
            continue;
        }
        if args.no_cache {
            session.clear_cache();
        }
        let started = Instant::now();
        let result = session.build().map_err(|error| {
            let last = session.state().chunks.last().map_or("", |c| c.id.as_str());
            let turn = times.len() + 1;
            let step = format!("turn {turn} (chunks 1 to {}, up to {last:?})", index + 1);
            Failure::During(step, error)
        })?;
        let build_us = started.elapsed().as_micros();
        let stats = session.stats();
        times.push(build_us);
        counted.push(stats.tokens_counted);
        tokens_counted += stats.tokens_counted;
        let mut turn = ReplayTurn::of(times.len(), index + 1, &result, options.low_water);
        let mut line = json!({
            "turn": times.len(),
            "chunks": index + 1,
            "token_count": result.token_count,
            "excluded": result.excluded().count(),
            "stable_prefix_tokens": result.stable_prefix_tokens,
            "cache": result.cache,
            "build_us": build_us,
            "new_tokens_counted": stats.tokens_counted,
        });
        if let Some(due) = result.compaction_due {
            line["compaction_due"] = json!(due);
        }
        if args.summarizer.is_some() && result.compaction_due == Some(true) {
            let compacted = compact(&mut session, args.keep_tokens)?;
            turn.compacted = compacted.is_some();
            line["compacted"] = json!(compacted);
        }
        emit(&mut out, &line)?;
        turns.push(turn);
        last = Some(result);
    }
    if let Some(path) = &args.html {
        let window = last.as_ref().map(|result| (result, session.state()));
        crate::write_page(path, &replay_page(&turns, window))?;
    }
    let run = Run {
        chunks: total,
        tokens_counted,
        cache: !args.no_cache,
    };
    emit(&mut out, &run.summary((&times, &counted), &turns))?;
    Ok(String::new())
}

/// What a replay's summary says besides its turns.
struct Run {
    chunks: usize,
    tokens_counted: usize,
    cache: bool,
}

impl Run {
    /// The summary line of a run whose turns took `times`, counted
    /// `counted` new tokens and went as `turns`.
    fn summary(
        &self,
        (times, counted): (&[u128], &[usize]),
        turns: &[ReplayTurn],
    ) -> serde_json::Value {
        let mut sorted = times.to_vec();
        sorted.sort_unstable();
        json!({"summary": {
            "turns": times.len(),
            "chunks": self.chunks,
            "total_build_us": times.iter().sum::<u128>(),
            "median_build_us": sorted.get(sorted.len() / 2),
            "max_build_us": sorted.last(),
            "tokens_counted": self.tokens_counted,
            "prefix_changes": turns.iter().filter(|t| t.broke()).count(),
            "compactions": turns.iter().filter(|t| t.compacted).count(),
            "quarters": quarters(times, counted),
            "cache": self.cache,
        }})
    }
}

/// The median and mean build time of each quarter of the turns (the last
/// quarter takes what does not divide evenly), to show whether a turn late
/// in the run costs what one early did; with the median of the new tokens
/// each turn counted, and of its time per 1,000 of them (over the turns
/// that counted any), since a turn costs what it must count: a late turn
/// that counts more is not a slower one. Empty below four turns.
fn quarters(times: &[u128], counted: &[usize]) -> Vec<serde_json::Value> {
    let quarter = times.len() / 4;
    if quarter == 0 {
        return Vec::new();
    }
    (0..4)
        .map(|q| {
            let end = if q == 3 {
                times.len()
            } else {
                (q + 1) * quarter
            };
            let mut part = times[q * quarter..end].to_vec();
            let turns = times[q * quarter..end].iter().zip(&counted[q * quarter..end]);
            let mut per_1k: Vec<f64> = turns
                .filter(|(_, new)| **new > 0)
                .map(|(us, new)| *us as f64 * 1000.0 / *new as f64)
                .collect();
            per_1k.sort_unstable_by(f64::total_cmp);
            let mut new = counted[q * quarter..end].to_vec();
            new.sort_unstable();
            part.sort_unstable();
            json!({
                "median_build_us": part[part.len() / 2],
                "mean_build_us": part.iter().sum::<u128>() / part.len() as u128,
                "median_new_tokens": new[new.len() / 2],
                "median_us_per_1k_new_tokens": per_1k.get(per_1k.len() / 2).map(|m| (m * 10.0).round() / 10.0),
            })
        })
        .collect()
}

/// Plans a compaction of `session`, summarizes it with the stand-in and
/// applies it: what it did, or `None` when there was nothing to fold.
fn compact(
    session: &mut ContextSession,
    keep_tokens: Option<usize>,
) -> agent_context::Result<Option<AppliedCompaction>> {
    let mut options = CompactionOptions::default();
    options.keep_tokens = keep_tokens;
    let CompactionPlan::Ready(plan) = session.plan_compaction(&options)? else {
        return Ok(None);
    };
    let summary = chat_compact::first_lines(&plan);
    session.apply_compaction(&plan.plan, summary).map(Some)
}

/// One cold build of the whole session finds the input a later turn would
/// refuse (a cap too small for a late chunk, say), so it is reported
/// before the first line, and what it warns of (an estimated model, a cap
/// on a tool no chunk has) is said once, as `build` says it. A budget a
/// turn cannot meet is no input error: the replay runs up to that turn,
/// showing the turns before it.
fn check_cold(
    builder: &ContextBuilder,
    recorded: &MemoryState,
    options: &command::BuildOptions,
) -> agent_context::Result<()> {
    match builder.build(recorded) {
        Ok(cold) => {
            let mut warnings = cold.warnings.to_vec();
            warnings.extend(command::unused_factor_warning(
                options.estimate_factor,
                &cold.model,
                cold.token_count_exact,
            ));
            crate::write_warnings(&warnings);
            Ok(())
        }
        Err(error) if command::exit_code(error.kind()) == 2 => Err(error),
        Err(_) => Ok(()),
    }
}

/// Writes `line` and flushes it, so a reader sees each turn as it is built.
/// Output that cannot be written (a closed pipe) ends the run as it ends any
/// command (see `main`).
fn emit(out: &mut impl Write, line: &serde_json::Value) -> Result<(), Failure> {
    writeln!(out, "{line}")
        .and_then(|()| out.flush())
        .map_err(Failure::Output)
}
