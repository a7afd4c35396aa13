//! What every native request shares: the options, the result type, the
//! bound on what it costs, and the warnings about the request as a whole.

use serde::Serialize;
use serde_json::Value;

use super::cache_breakpoints::CacheBreakpoint;
use super::conversation::Conversation;
use crate::error::Result;
use crate::model::roles::Role;
use crate::output::result::BuildResult;
use crate::render::Record;

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
    /// An upper bound on the prompt's tokens (see docs/native.md): the build's count of its records. A call or result sent
    /// as text is its record, so it costs what the build counted.
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
    /// OpenAI's Chat Completions.
    OpenAi,
    /// OpenAI's Responses, which takes compaction items back.
    OpenAiResponses,
    /// Anthropic's Messages, which takes compaction blocks back (beta).
    Anthropic,
    /// The AI SDK's messages, which any provider's model is called with.
    AiSdk,
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
/// [`ErrorKind::Option`] if `result` is not a native build.
pub(crate) fn prepare(result: &BuildResult, provider: Provider) -> Result<Prepared> {
    let (conversation, repairs) = Conversation::of(result)?.paired();
    let mut warnings = result.warnings.clone();
    warnings.extend(provider_warning(&result.model, provider));
    warnings.extend(compaction_warnings(&conversation, provider));
    if repairs.as_text > 0 {
        warnings.push(format!(
            "{} tool call(s) or result(s) had no partner in the adjacent message and were sent \
             as text",
            repairs.as_text
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
            token_count: result.token_count,
            token_count_exact: false,
            stable_prefix_tokens: result.stable_prefix_tokens,
            cache_breakpoints: Vec::new(),
            unpaired: repairs.as_text,
            warnings,
        },
    })
}

/// A warning when `model` is not one of `provider`'s: the counts were made
/// with another tokenizer than the one that will bill.
fn provider_warning(model: &str, provider: Provider) -> Option<String> {
    let anthropic_model = model.starts_with("claude");
    let (fits, name) = match provider {
        Provider::OpenAi | Provider::OpenAiResponses => (!anthropic_model, "OpenAI"),
        Provider::Anthropic => (anthropic_model, "Anthropic"),
        Provider::AiSdk => return None,
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
/// its signature (which only Anthropic checks), a compaction's tagged
/// summary.
pub(crate) fn text_of(record: &Record) -> Option<&str> {
    match record {
        Record::Text { text } | Record::Compaction { text, .. } => Some(text),
        Record::Thinking { thinking, .. } => Some(thinking),
        _ => None,
    }
}

/// The warnings about the compaction items `provider` is sent: one for
/// each opaque item (`encrypted_content`: what it costs the provider
/// cannot be counted, and the build counted its JSON instead), and for
/// Anthropic the beta its blocks need.
fn compaction_warnings(conversation: &Conversation, provider: Provider) -> Vec<String> {
    let items = conversation.turns.iter().flat_map(|t| &t.items);
    let sent: Vec<(&str, &Value)> = items
        .filter_map(|item| match (item, provider) {
            (
                Record::Compaction {
                    id,
                    anthropic: Some(v),
                    ..
                },
                Provider::Anthropic,
            )
            | (
                Record::Compaction {
                    id,
                    openai: Some(v),
                    ..
                },
                Provider::OpenAiResponses,
            ) => Some((id.as_str(), v)),
            _ => None,
        })
        .collect();
    let mut warnings: Vec<String> = sent
        .iter()
        .filter(|(_, item)| item.get("encrypted_content").is_some_and(|e| !e.is_null()))
        .map(|(id, _)| {
            format!(
                "compaction {id:?} is sent as the provider's opaque item (encrypted_content): \
                 its tokens are an estimate, counted from its JSON"
            )
        })
        .collect();
    if provider == Provider::Anthropic && !sent.is_empty() {
        warnings.push(
            "the request holds compaction blocks, which Anthropic's beta Messages API takes: \
             send it with the header `anthropic-beta: compact-2026-01-12` (the SDK's \
             client.beta.messages.create(..., betas=[\"compact-2026-01-12\"]))"
                .into(),
        );
    }
    warnings
}
