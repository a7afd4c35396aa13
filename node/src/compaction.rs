//! Compaction's options and arguments: `chat compact --plan`'s own flags
//! (`keepTokens`, …), the summary and the providers' own items, read as
//! the CLI reads them.

use agent_context::command::chat_compact;
use agent_context::compaction::{CompactionOptions, CompactionSummary, RequestFormat};
use serde_json::{Map, Value};

use crate::errors::{Result, guarded, option_error};
use crate::options::Call;
use crate::values::{count, optional_text};

/// The options of a compaction plan beside the build's (`output` is the
/// request's shape).
pub const COMPACTION_KEYS: [&str; 6] = [
    "keepTokens",
    "summarizerModel",
    "summarizerMaxTokens",
    "summaryTokens",
    "instructions",
    "output",
];

/// The compaction options of `map`, taken out of it: what is left are
/// the build's.
pub fn compaction_options(map: &mut Map<String, Value>) -> Result<CompactionOptions> {
    let mut options = CompactionOptions::default();
    let mut counted = |key: &str| match map.remove(key) {
        Some(value) => count(&value, key),
        None => Ok(None),
    };
    options.keep_tokens = counted("keepTokens")?;
    options.summarizer_max_tokens = counted("summarizerMaxTokens")?;
    options.summary_tokens = counted("summaryTokens")?;
    options.summarizer_model =
        optional_text(map.remove("summarizerModel").as_ref(), "summarizerModel")?;
    options.instructions = optional_text(map.remove("instructions").as_ref(), "instructions")?;
    if let Some(name) = optional_text(map.remove("output").as_ref(), "output")? {
        options.request_format =
            RequestFormat::parse(&name).map_err(|m| option_error("output", m))?;
    }
    Ok(options)
}

/// The summary of text `summary` and `native` (the JSON text of
/// `{"anthropic": BLOCK, "openai": ITEM}`, either key), each no longer
/// than `call`'s `maxInputBytes`.
pub fn summary_of(summary: String, native: Option<&str>, call: &Call) -> Result<CompactionSummary> {
    call.check_size(&summary)?;
    let mut made = CompactionSummary::from(summary);
    if let Some(native) = native {
        call.check_size(native)?;
        made = made.with_native(guarded(|| chat_compact::read_native(native))?);
    }
    Ok(made)
}
