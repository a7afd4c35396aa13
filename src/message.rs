//! What a build returns: messages, exact counts, and one decision per chunk;
//! what it hands the next build (its summary, its messages' fingerprints);
//! and how a provider's bill for it calibrates estimates.

use std::hash::Hasher;

use serde::Serialize;

use crate::budget::{AppliedEdit, ChunkDecision, Decision, Elision};
use crate::chunk_id::{ChunkId, ChunkIds};
use crate::error::Result;
use crate::message_text::MessageText;
use crate::render::Protocol;
use crate::roles::Role;
use crate::rows::Rows;
use crate::tokens::parts::CountedText;
use crate::tokens::{Calibration, Encoding, EstimateFactor, TiktokenCounter, TokenCounter};

/// One message of the prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ContextMessage {
    /// Who speaks.
    pub role: Role,
    /// The rendered chunks, joined by a blank line.
    pub content: MessageText,
    /// Ids of the chunks in this message, in order (markers have none).
    pub chunk_ids: ChunkIds,
    /// Tokens this message costs: content plus its framing.
    pub tokens: usize,
}

/// A chunk whose body was shortened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Truncation {
    /// The chunk's id.
    pub id: ChunkId,
    /// Tokens of the rendered chunk before.
    pub tokens_before: usize,
    /// Tokens of the rendered chunk after (alone, as
    /// [`ChunkDecision::tokens`](crate::budget::ChunkDecision::tokens)); at most `cap`.
    pub tokens_after: usize,
    /// The cap on the whole rendered chunk, tag and marker included.
    pub cap: usize,
}

impl Truncation {
    /// The truncation `decision` records, if its chunk was kept truncated.
    pub(crate) fn of(decision: &ChunkDecision) -> Option<Truncation> {
        match decision.decision {
            Decision::Truncated {
                tokens_before,
                tokens_after,
                cap,
            } => Some(Truncation {
                id: decision.id.clone(),
                tokens_before,
                tokens_after,
                cap,
            }),
            _ => None,
        }
    }
}

/// The result of a build.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct BuildResult {
    /// The model the build was counted for.
    pub model: String,
    /// The encoding that counted it.
    pub encoding: String,
    /// Tokens available to the prompt: `max_tokens - reserve_output`.
    pub budget: usize,
    /// The prompt budget before the reserve.
    pub max_tokens: usize,
    /// Tokens held back for the reply.
    pub reserve_output: usize,
    /// Tokens of the whole prompt, framing included: what the provider bills.
    pub token_count: usize,
    /// Whether `token_count` is exact: false for estimates, and for
    /// [native](Protocol::Native) builds, whose framing is counted as a
    /// bound.
    pub token_count_exact: bool,
    /// The messages, system first.
    pub messages: Rows<ContextMessage>,
    /// Ids of the chunks in the prompt, in order.
    pub included: Rows<ChunkId>,
    /// Ids of the chunks left out, in input order.
    pub excluded: Rows<ChunkId>,
    /// Chunks whose bodies were shortened.
    pub truncated: Rows<Truncation>,
    /// What the budget elided, if anything.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elided: Option<Elision>,
    /// The size this build trimmed the prompt to, when it had to trim: the
    /// low-water mark (`budget * low_water`, or more when that would leave
    /// only protected content), or the budget itself. Absent when everything
    /// fit or the previous build's cut was kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trim_target: Option<usize>,
    /// Tokens of the leading messages byte-identical to the previous build's,
    /// when one was given (see [`ContextBuilder::previous`](crate::ContextBuilder::previous)).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stable_prefix_tokens: Option<usize>,
    /// The summary in the prompt, for the next build to reuse.
    #[serde(skip)]
    pub(crate) summary: Option<Summary>,
    /// Per message, what the next build compares its own with (for its
    /// `stable_prefix_tokens`).
    #[serde(skip)]
    pub(crate) fingerprints: Rows<MessageFingerprint>,
    /// The counts of the last message's last part, for a session to
    /// extend that message (see `ContextBuilder::extend`).
    #[serde(skip)]
    pub(crate) last_part: Option<CountedText>,
    /// How the history was rendered: only a [native](Protocol::Native)
    /// build can be read by the native adapters.
    #[serde(skip)]
    pub(crate) protocol: Protocol,
    /// One decision per input chunk, in input order (per chunk read, for a
    /// stored chat built from its newest chunks: see `unread_chunks`).
    pub decisions: Rows<ChunkDecision>,
    /// Stored chunks a chat's build did not read: older ones the budget
    /// drops whatever they hold, counted in `elided` but not listed in
    /// `excluded` or `decisions`. Absent (0) for every other build.
    #[serde(skip_serializing_if = "is_zero")]
    pub unread_chunks: usize,
    /// The `context_management` edits that cleared something, in
    /// Anthropic's response shape.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub applied_edits: Vec<AppliedEdit>,
    /// Things the caller should know (e.g. a budget above the model's window).
    pub warnings: Vec<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl BuildResult {
    /// The message with the system role, if any.
    pub fn system_message(&self) -> Option<&ContextMessage> {
        self.messages.first().filter(|m| m.role == Role::System)
    }

    /// The messages after the system message.
    pub fn history(
        &self,
    ) -> impl DoubleEndedIterator<Item = &ContextMessage> + ExactSizeIterator + '_ {
        let skip = usize::from(self.system_message().is_some());
        self.messages.iter().skip(skip)
    }

    /// The system prompt split off from the messages, for callers that
    /// send it apart (Anthropic's `system`, say).
    pub fn resolved(&self) -> Resolved {
        Resolved {
            system_prompt: self.system_message().map(|m| m.content.to_string()),
            messages: self.history().cloned().collect(),
        }
    }
}

/// A build split for callers that send the system prompt apart from the
/// messages; see [`ContextBuilder::resolve`](crate::ContextBuilder::resolve).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Resolved {
    /// The system message's content (system prompt, fragments, system chunks).
    pub system_prompt: Option<String>,
    /// The history messages, oldest first.
    pub messages: Vec<ContextMessage>,
}

/// The summary that stands for dropped history, kept so the next build can
/// reuse it while its cut is unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Summary {
    /// The elision it summarizes: chunks and tokens.
    pub(crate) chunks: usize,
    pub(crate) tokens: usize,
    /// The summary's text, before escaping.
    pub(crate) body: String,
}

/// A message remembered by its length and a hash of its content rather
/// than a copy: a session of a long prompt would otherwise hold it twice.
/// Unrelated contents of one length share the 64-bit hash with odds of
/// 2^-64; the hash is not built to resist content crafted to collide, which
/// could only overstate the reported stable prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MessageFingerprint {
    pub(crate) role: Role,
    pub(crate) len: usize,
    pub(crate) hash: u64,
    /// The content tokens that stay if the message grows.
    pub(crate) growable: usize,
}

impl MessageFingerprint {
    /// `message`, whose first `growable` content tokens stay if it grows.
    pub(crate) fn of(message: &ContextMessage, growable: usize) -> Self {
        MessageFingerprint {
            role: message.role,
            len: message.content.len(),
            hash: content_hash(&message.content),
            growable,
        }
    }
}

/// The fingerprints of `messages`, whose first `growable` content tokens
/// (one figure per message) stay if they grow.
pub(crate) fn fingerprints(
    messages: &Rows<ContextMessage>,
    growable: &[usize],
) -> Rows<MessageFingerprint> {
    messages
        .iter()
        .zip(growable)
        .map(|(message, &growable)| MessageFingerprint::of(message, growable))
        .collect()
}

/// The ids of the chunks in `messages`, in order.
pub(crate) fn included(messages: &Rows<ContextMessage>) -> Rows<ChunkId> {
    messages
        .iter()
        .flat_map(|m| m.chunk_ids.iter().cloned())
        .collect()
}

/// The hash a [`MessageFingerprint`] keeps of a message's content.
pub(crate) fn content_hash(content: &str) -> u64 {
    let mut hasher = rustc_hash::FxHasher::default();
    hasher.write(content.as_bytes());
    hasher.finish()
}

// Here rather than in `tokens::calibration`: it reads a build's result,
// and the token counters sit below the build.
impl Calibration {
    /// Learns from a provider's figure for a prompt this crate built.
    ///
    /// `billed_tokens` is every input token billed for `result`'s messages:
    /// for Anthropic, the sum of `usage.input_tokens`,
    /// `usage.cache_creation_input_tokens` and `usage.cache_read_input_tokens`
    /// (with prompt caching, `input_tokens` alone leaves out the cached
    /// part). The base is the `o200k_base` count
    /// of the messages' content, framing left out, so the provider's own
    /// framing counts into the ratio and the factor errs high. A build that
    /// was counted exactly teaches nothing: it is left alone, and the
    /// current factor returned.
    ///
    /// Costs one `o200k_base` count of the prompt. Returns the factor now
    /// in force for `result.model`.
    ///
    /// # Errors
    ///
    /// As [`observe_counts`](Calibration::observe_counts);
    /// [`ErrorKind::Tokenizer`](crate::ErrorKind::Tokenizer) if the
    /// `o200k_base` tables fail to load.
    pub fn observe(&self, result: &BuildResult, billed_tokens: usize) -> Result<EstimateFactor> {
        if result.token_count_exact {
            return Ok(self.factor(&result.model));
        }
        let base_tokens = base_tokens(result)?;
        self.observe_counts(&result.model, base_tokens, billed_tokens)
    }
}

/// The `o200k_base` count of `result`'s message contents, framing left
/// out: the base an estimate's factor is learned against.
///
/// # Errors
///
/// [`ErrorKind::Tokenizer`](crate::ErrorKind::Tokenizer) if the
/// `o200k_base` tables fail to load.
pub(crate) fn base_tokens(result: &BuildResult) -> Result<usize> {
    let base = TiktokenCounter::new(Encoding::O200kBase)?;
    Ok(result
        .messages
        .iter()
        .map(|message| base.count(&message.content))
        .sum())
}
