//! What every native request shares: the options, the result type, the
//! bound on what it costs, and the warnings about the request as a whole.

use serde::Serialize;
use serde_json::Value;

use super::cache::CacheBreakpoint;
use super::conversation::{Conversation, Repairs};
use crate::error::{ErrorKind, Result};
use crate::message::BuildResult;
use crate::render::Record;
use crate::roles::Role;
use crate::tokens::counter_for_model;

/// Options of the native adapters.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct NativeOptions {
    /// Whether Anthropic requests mark their stable prefix with
    /// `cache_control` breakpoints (default `true`).
    pub cache_breakpoints: bool,
}

impl Default for NativeOptions {
    fn default() -> Self {
        NativeOptions {
            cache_breakpoints: true,
        }
    }
}

/// A provider request built from a [native](crate::render::Protocol::Native)
/// build.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct NativeRequest {
    /// The request body, ready to POST (add the runtime's `tools`).
    pub body: Value,
    /// An upper bound on the prompt's tokens (see the README's "Native
    /// requests"): the build's count of its records, plus what sending an
    /// unpaired call or result as text added.
    pub token_count: usize,
    /// Always `false`: the provider's framing of native structures is
    /// counted as a bound.
    pub token_count_exact: bool,
    /// Tokens of the leading messages unchanged since the previous build,
    /// when one was given: the prefix the provider can serve from its cache.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stable_prefix_tokens: Option<usize>,
    /// Where `cache_control` marks were placed (Anthropic only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cache_breakpoints: Vec<CacheBreakpoint>,
    /// Calls and results sent as text because they could not be paired.
    pub unpaired: usize,
    /// The build's warnings, and the request's own.
    pub warnings: Vec<String>,
}

/// Which provider API a request is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Provider {
    OpenAi,
    Anthropic,
}

/// The paired conversation of `result` and the request's bound and
/// warnings, shared by the three adapters.
pub(crate) struct Prepared {
    pub(crate) conversation: Conversation,
    pub(crate) request: NativeRequest,
}

/// Reads `result` for a request to `provider`.
///
/// # Errors
///
/// [`ErrorKind::Option`] if `result` is not a native build;
/// [`ErrorKind::BudgetExceeded`] if sending unpaired calls as text would
/// overflow the budget; [`ErrorKind::Tokenizer`] if counting that fails.
pub(crate) fn prepare(result: &BuildResult, provider: Provider) -> Result<Prepared> {
    let (conversation, repairs) = Conversation::of(result)?.paired();
    let token_count = within_budget(result, result.token_count + repair_cost(result, &repairs)?)?;
    let mut warnings = result.warnings.clone();
    warnings.extend(provider_warning(&result.model, provider));
    if !repairs.as_text.is_empty() {
        warnings.push(format!(
            "{} tool call(s) or result(s) had no partner in the adjacent message and were sent \
             as text",
            repairs.as_text.len()
        ));
    }
    if conversation
        .turns
        .last()
        .is_some_and(|t| t.role == Role::Assistant)
    {
        warnings.push(
            "the history ends with an assistant message: Anthropic continues it as a prefill, \
             and OpenAI answers after it"
                .into(),
        );
    }
    Ok(Prepared {
        conversation,
        request: NativeRequest {
            body: Value::Null,
            token_count,
            token_count_exact: false,
            stable_prefix_tokens: result.stable_prefix_tokens,
            cache_breakpoints: Vec::new(),
            unpaired: repairs.as_text.len(),
            warnings,
        },
    })
}

/// The tokens sending calls and results as text adds to the build's count.
fn repair_cost(result: &BuildResult, repairs: &Repairs) -> Result<usize> {
    let line = |record: &Record| {
        let mut line = String::new();
        record.write(&mut line);
        line
    };
    added_tokens(
        result,
        repairs
            .as_text
            .iter()
            .map(|(was, now)| (line(was), line(now))),
    )
}

/// The tokens the `(was, now)` replacements add to `result`'s count, each
/// counted alone with the model's counter (not a custom one the builder
/// may have had): they are a handful of short strings beside the build.
pub(crate) fn added_tokens(
    result: &BuildResult,
    replacements: impl ExactSizeIterator<Item = (String, String)>,
) -> Result<usize> {
    if replacements.len() == 0 {
        return Ok(0);
    }
    let counter = counter_for_model(&result.model)?;
    Ok(replacements
        .map(|(was, now)| counter.count(&now).saturating_sub(counter.count(&was)))
        .sum())
}

/// `token_count`, or the error that it does not fit `result`'s budget.
pub(crate) fn within_budget(result: &BuildResult, token_count: usize) -> Result<usize> {
    if token_count > result.budget {
        return Err(ErrorKind::BudgetExceeded {
            required: token_count,
            available: result.budget,
            max_tokens: result.max_tokens,
            reserve_output: result.reserve_output,
        }
        .into());
    }
    Ok(token_count)
}

/// A warning when `model` is not one of `provider`'s: the counts were made
/// with another tokenizer than the one that will bill.
fn provider_warning(model: &str, provider: Provider) -> Option<String> {
    let anthropic_model = model.starts_with("claude");
    let (fits, name) = match provider {
        Provider::OpenAi => (!anthropic_model, "OpenAI"),
        Provider::Anthropic => (anthropic_model, "Anthropic"),
    };
    (!fits).then(|| {
        format!(
            "model {model:?} is not an {name} model: the request was counted for another \
             provider's tokenizer; build with the model you will call"
        )
    })
}

/// `body` with `"max_tokens"`-like `key` set to the reserve, when there is one.
pub(crate) fn reserve_into(body: &mut serde_json::Map<String, Value>, key: &str, reserve: usize) {
    if reserve > 0 {
        body.insert(key.into(), Value::from(reserve));
    }
}

/// The text a record shows where the API takes only text: thinking without
/// its signature (which only Anthropic checks).
pub(crate) fn text_of(record: &Record) -> Option<&str> {
    match record {
        Record::Text { text } => Some(text),
        Record::Thinking { thinking, .. } => Some(thinking),
        _ => None,
    }
}
