//! Compaction's arguments: the plan's token, the summary and the
//! providers' own items, read as `chat compact --apply` reads its flags.

use agent_context::command::chat_compact;
use agent_context::compaction::CompactionSummary;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::convert::{json_text, text_of};
use crate::errors::{input_error, to_py};
use crate::options::Call;

/// The keywords of `apply_compaction` beside the build's.
pub const APPLY_KEYWORDS: [&str; 1] = ["native"];

/// The plan's token: the str `plan_compaction` returned under `"plan"`,
/// or that dict itself.
pub fn plan_token(plan: &Bound<'_, PyAny>) -> PyResult<String> {
    let Ok(dict) = plan.cast::<PyDict>() else {
        return text_of(plan, "plan");
    };
    match dict.get_item("plan")? {
        Some(token) if !token.is_none() => text_of(&token, "plan[\"plan\"]"),
        _ => {
            let reason = match dict.get_item("reason")? {
                Some(reason) => format!(" ({})", reason.str()?),
                None => String::new(),
            };
            Err(input_error(format!(
                "the plan holds no plan to apply: there was nothing to fold{reason}"
            )))
        }
    }
}

/// The summary `summary` (its text) and `native` (`{"anthropic": BLOCK,
/// "openai": ITEM}`, either key, as a dict or its JSON) say, each no
/// longer than `call`'s `max_input_bytes`.
pub fn summary_of(
    summary: &Bound<'_, PyAny>,
    native: Option<&Bound<'_, PyAny>>,
    call: &Call,
) -> PyResult<CompactionSummary> {
    let text = text_of(summary, "summary")?;
    call.check_size(&text)?;
    let mut made = CompactionSummary::from(text);
    if let Some(native) = native.filter(|native| !native.is_none()) {
        let json = json_text(native, "native")?;
        call.check_size(&json)?;
        made = made.with_native(chat_compact::read_native(&json).map_err(to_py)?);
    }
    Ok(made)
}
