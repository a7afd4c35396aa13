//! Compaction in two steps, so any runtime calls its own model in
//! between: [`plan`](crate::ContextSession::plan_compaction) picks the
//! span to fold and writes the summarization request;
//! [`apply`](crate::ContextSession::apply_compaction) appends the summary
//! as a `compaction` chunk, after checking that the plan still holds.
//!
//! What a compaction folds is the plan layer's rule (`budget::fold`),
//! written once: the build, the plan and the apply all ask it. This
//! module chooses the span (whole steps, the newest `keep_tokens` of
//! history kept verbatim, never the newest tool use), fits it to the
//! summarizer's window (`request`), and seals the plan in a token the
//! apply checks (`token`). See `docs/compaction.md`.

mod apply;
mod request;
mod span;
mod token;

use serde::Serialize;
use serde::ser::{SerializeStruct, Serializer};

use crate::error::Result;
use crate::model::memory::MemoryState;
use crate::pipeline::{BuildCache, only_renders};
use crate::settings::Settings;
use crate::tokens::TokenCounter;
use crate::tokens::parts::CountedText;
use std::sync::Arc;

pub use crate::model::compaction::{CompactionFields, NativeCompaction, SpanSize};
pub(crate) use apply::{Compaction, apply, folded_by};
pub(crate) use span::{Scope, plan};

/// What compaction reads of a chat's compiled settings.
pub(crate) struct Chat<'a> {
    pub(crate) settings: &'a Settings,
    pub(crate) counter: &'a dyn TokenCounter,
    /// Tokens available to the prompt.
    pub(crate) budget: usize,
    /// The prompt budget before the reserve.
    pub(crate) max_tokens: usize,
}

impl Chat<'_> {
    /// The chunks of `state` at `indices` as the prompt shows them, each
    /// rendered alone under its cap.
    fn rendered_alone(
        &self,
        state: &MemoryState,
        indices: &[usize],
        cache: &mut BuildCache,
    ) -> Result<Vec<Arc<CountedText>>> {
        only_renders(self.settings, state, self.counter, cache).rendered_alone(indices)
    }

    /// The tokens of the chunks of `state` at `indices`, each alone under
    /// its cap.
    fn tokens_alone(
        &self,
        state: &MemoryState,
        indices: &[usize],
        cache: &mut BuildCache,
    ) -> Result<Vec<usize>> {
        only_renders(self.settings, state, self.counter, cache).tokens_alone(indices)
    }

    /// The key of the settings a plan counts under.
    fn plan_key(&self) -> String {
        (self.settings)
            .plan_key(&self.settings.policy)
            .unwrap_or_default()
    }
}

/// How a compaction is planned. `Default` gives the documented defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CompactionOptions {
    /// Tokens of the newest history kept verbatim. Default: a quarter of
    /// the budget; at most the budget.
    pub keep_tokens: Option<usize>,
    /// The model that writes the summary, which counts the request.
    /// Default: the chat's model.
    pub summarizer_model: Option<String>,
    /// The summarizer's window: the request plus the summary fit in it.
    /// Default: the summarizer model's context window, else the chat's
    /// `max_tokens`.
    pub summarizer_max_tokens: Option<usize>,
    /// The most tokens the summary may take. Default 2,048 (at most half
    /// the summarizer's window).
    pub summary_tokens: Option<usize>,
    /// Instructions for the summarizer, instead of the default template.
    pub instructions: Option<String>,
    /// The shape of the request.
    pub request_format: RequestFormat,
}

/// The shape of a summarization request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum RequestFormat {
    /// Plain `[{role, content}]` messages, a system message first.
    #[default]
    Messages,
    /// An OpenAI Chat Completions body: `{model, messages,
    /// max_completion_tokens}`.
    OpenAi,
    /// An Anthropic Messages body: `{model, max_tokens, system, messages}`.
    Anthropic,
}

impl RequestFormat {
    /// The format a name (`messages`, `openai`, `anthropic`) stands for.
    pub fn from_name(name: &str) -> Option<RequestFormat> {
        match name {
            "messages" => Some(RequestFormat::Messages),
            "openai" => Some(RequestFormat::OpenAi),
            "anthropic" => Some(RequestFormat::Anthropic),
            _ => None,
        }
    }

    /// The format named `name`, or the message a binding's option error
    /// gives.
    ///
    /// # Errors
    ///
    /// The message names the formats.
    pub fn parse(name: &str) -> std::result::Result<RequestFormat, String> {
        RequestFormat::from_name(name).ok_or_else(|| {
            format!(
                "{name:?} is not a request format; expected one of: messages, openai, anthropic"
            )
        })
    }
}

/// What planning a compaction found.
#[derive(Debug, Clone, PartialEq)]
pub enum CompactionPlan {
    /// A span to fold, and the request that summarizes it.
    Ready(PlannedCompaction),
    /// Nothing to fold, and why.
    Nothing {
        /// Why (the history is within `keep_tokens`, …).
        reason: String,
    },
}

/// A span to fold and the request that summarizes it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct PlannedCompaction {
    /// The plan, sealed: hand it back to `apply` with the summary.
    pub plan: String,
    /// The last chunk the compaction will cover.
    pub covers: String,
    /// What this compaction folds that the prompt still showed (the
    /// previous summary among them), as the chat's settings count it.
    pub folded: SpanSize,
    /// What is left to fold for the next round: the part of the span the
    /// summarizer's window could not take.
    pub remaining: SpanSize,
    /// The summarization request.
    pub request: serde_json::Value,
    /// Its tokens for the summarizer model; never more than its window
    /// minus `summary_tokens`.
    pub request_tokens: usize,
    /// Whether `request_tokens` is exact (an estimate for a model whose
    /// tokenizer is not public).
    pub request_tokens_exact: bool,
    /// The most tokens the summary may take.
    pub summary_tokens: usize,
}

impl Serialize for CompactionPlan {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            CompactionPlan::Ready(plan) => plan.serialize(serializer),
            CompactionPlan::Nothing { reason } => {
                let mut object = serializer.serialize_struct("CompactionPlan", 2)?;
                object.serialize_field("plan", &None::<String>)?;
                object.serialize_field("reason", reason)?;
                object.end()
            }
        }
    }
}

/// A summary to apply: its text, and the providers' own items when the
/// runtime has them (see [`NativeCompaction`]).
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct CompactionSummary {
    /// The portable summary.
    pub text: String,
    /// The providers' compaction items, kept verbatim.
    pub native: Option<NativeCompaction>,
}

impl CompactionSummary {
    /// A summary with the providers' own items.
    pub fn with_native(mut self, native: NativeCompaction) -> Self {
        self.native = Some(native);
        self
    }
}

impl From<&str> for CompactionSummary {
    fn from(text: &str) -> Self {
        CompactionSummary {
            text: text.to_owned(),
            native: None,
        }
    }
}

impl From<String> for CompactionSummary {
    fn from(text: String) -> Self {
        CompactionSummary { text, native: None }
    }
}

/// A compaction applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct AppliedCompaction {
    /// The chat (`None` for a session).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chat: Option<String>,
    /// The branch (`None` for a session).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// The branch's head after the save, the compaction's node (`None`
    /// for a session).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub head: Option<i64>,
    /// The compaction chunk's id.
    pub compaction: String,
    /// The last chunk it covers.
    pub covers: String,
    /// What the prompt showed of its span before: the plan's `folded`
    /// tokens.
    pub tokens_before: u64,
    /// What the summary costs in their place.
    pub tokens_after: u64,
}
