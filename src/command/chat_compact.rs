//! `chat compact`: plan a compaction of a stored chat, or apply a plan
//! with the summary the runtime's model wrote (see [`crate::compaction`]).

use serde_json::Value;

use super::BuildOptions;
use super::chat::ChatTarget;
use crate::compaction::{
    CompactionOptions, CompactionSummary, NativeCompaction, PlannedCompaction,
};
use crate::{ErrorKind, Result};

/// `chat compact --plan`: the plan as JSON (`{"plan": null, "reason"}`
/// when there is nothing to fold). The chat is unchanged.
///
/// # Errors
///
/// A store or chat that does not exist, options that contradict each
/// other or the budget.
pub fn plan(
    target: &ChatTarget,
    options: &BuildOptions,
    compaction: &CompactionOptions,
) -> Result<Value> {
    let mut engine = target.open_existing(options.builder()?)?;
    let plan = engine.plan_compaction(compaction)?;
    Ok(serde_json::to_value(plan).unwrap_or_default())
}

/// `chat compact --apply`: the compaction appended in one save, as JSON.
///
/// # Errors
///
/// A store or chat that does not exist, a plan that no longer holds, a
/// summary that is empty or no smaller than what it folds; nothing is
/// written.
pub fn apply(
    target: &ChatTarget,
    options: &BuildOptions,
    plan: &str,
    summary: CompactionSummary,
) -> Result<Value> {
    let mut engine = target.open_existing(options.builder()?)?;
    let applied = engine.apply_compaction(plan, summary)?;
    Ok(serde_json::to_value(applied).unwrap_or_default())
}

/// A stand-in summarizer for tests and `replay --summarizer first-lines`,
/// not for production: the opening line of each chunk the plan's request
/// shows (its tag, with id, tool and call id), in order, within a quarter
/// of the plan's `summary_tokens` (at about four bytes a token). The same
/// plan always gets the same summary.
pub fn first_lines(plan: &PlannedCompaction) -> String {
    let most_bytes = plan.summary_tokens.saturating_mul(4) / 4;
    let span = plan.request[1]["content"]
        .as_str()
        .or_else(|| plan.request["messages"][1]["content"].as_str())
        .or_else(|| plan.request["messages"][0]["content"].as_str())
        .unwrap_or_default();
    let mut summary = String::from("Earlier steps (first lines):");
    for line in span
        .lines()
        .filter(|l| l.starts_with('<') && !l.starts_with("</"))
    {
        let line: String = line.chars().take(120).collect();
        if summary.len() + line.len() + 1 > most_bytes {
            break;
        }
        summary.push('\n');
        summary.push_str(&line);
    }
    summary
}

/// The providers' compaction items of `--native`: a JSON object such as
/// `{"anthropic": {"type": "compaction", …}, "openai": {…}}`.
///
/// # Errors
///
/// [`ErrorKind::Option`] naming the flag and the field at fault.
pub fn read_native(text: &str) -> Result<NativeCompaction> {
    let value: Value =
        crate::parse_json(text, crate::ParseOptions::new()).map_err(|error| ErrorKind::Option {
            option: "native".into(),
            message: error.to_string(),
        })?;
    NativeCompaction::from_value(value).map_err(|(field, message)| {
        ErrorKind::Option {
            option: "native".into(),
            message: format!("{field}: {message}"),
        }
        .into()
    })
}
