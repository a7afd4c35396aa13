//! [`BuildResult`]: what a build returns, messages, exact counts and one
//! decision per chunk, with what it hands the next build; and how a
//! provider's bill for it calibrates estimates.

use serde::ser::{SerializeStruct, Serializer};
use serde::{Deserialize, Serialize};

use crate::budget::{AppliedEdit, ChunkDecision, Decision, Elision};
use crate::error::Result;
use crate::model::chunk_id::ChunkId;
use crate::model::roles::Role;
use crate::model::rows::Rows;
use crate::output::cache::CacheReport;
use crate::output::message::{ContextMessage, MessageFingerprint, Summary};
use crate::render::Protocol;
use crate::tokens::parts::CountedText;
use crate::tokens::{Calibration, Encoding, EstimateFactor, TiktokenCounter, TokenCounter};

/// The result of a build.
///
/// What became of each chunk is one list, [`decisions`](BuildResult::decisions);
/// [`included`](BuildResult::included), [`excluded`](BuildResult::excluded)
/// and [`truncated`](BuildResult::truncated) are views of it and of the
/// messages, and the report's JSON lists them under those names.
#[derive(Debug, Clone, PartialEq)]
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
    /// What the budget elided, if anything.
    pub elided: Option<Elision>,
    /// The size this build trimmed the prompt to, when it had to trim: the
    /// low-water mark (`budget * low_water`, or more when that would leave
    /// only protected content), or the budget itself. Absent when everything
    /// fit or the previous build's cut was kept.
    pub trim_target: Option<usize>,
    /// Tokens of the leading messages byte-identical to the previous build's,
    /// when one was given (see [`ContextBuilder::previous`](crate::ContextBuilder::previous)).
    pub stable_prefix_tokens: Option<usize>,
    /// What a provider's prefix cache can serve of the previous build's
    /// prompt in this one, and where and why it broke: in every build of
    /// a session after its first, and in a build given its previous one
    /// (see [`cache_since`](BuildResult::cache_since)).
    pub cache: Option<CacheReport>,
    /// A hash of the settings and policy that shape the prompt, the system
    /// prompt left out: a [`CacheReport`] tells a changed setting by it.
    pub(crate) settings_key: Option<u64>,
    /// The summary in the prompt, for the next build to reuse.
    pub(crate) summary: Option<Summary>,
    /// Per message, what the next build compares its own with (for its
    /// `stable_prefix_tokens`).
    pub(crate) fingerprints: Rows<MessageFingerprint>,
    /// The counts of the last message's last part, for a session to
    /// extend that message (see `pipeline::extend`).
    pub(crate) last_part: Option<CountedText>,
    /// How the history was rendered: only a [native](Protocol::Native)
    /// build can be read by the native adapters.
    pub(crate) protocol: Protocol,
    /// One decision per input chunk, in input order (per chunk read, for a
    /// stored chat built from its newest chunks: see `unread_chunks`).
    pub decisions: Rows<ChunkDecision>,
    /// Stored chunks a chat's build did not read: older ones the budget
    /// drops whatever they hold, counted in `elided` (or, on a compacted
    /// chat, folded by the compaction in effect), but not listed in
    /// `excluded` or `decisions`. Absent (0) for every other build.
    pub unread_chunks: usize,
    /// The `context_management` edits that cleared something, in
    /// Anthropic's response shape.
    pub applied_edits: Vec<AppliedEdit>,
    /// Things the caller should know (e.g. a budget above the model's window).
    pub warnings: Vec<String>,
    /// For a stored chat's build: whether it extended the branch's last
    /// build, as a session extends its own, or started cold, and why.
    /// `None` for every other build.
    pub previous_build: Option<PreviousBuild>,
    /// The compaction in effect: the newest `compaction` chunk, and what
    /// it folds (see `docs/compaction.md`). `None` without one.
    pub compaction: Option<CompactionInEffect>,
    /// Whether the history before trimming (the prompt plus what the
    /// budget and context editing took out of it) costs more than the
    /// compaction trigger ([`Policy::compact_at`](crate::budget::Policy::compact_at),
    /// or a `compact_20260112` edit's): a loop plans a compaction when it
    /// is `true`. `None` without a trigger.
    pub compaction_due: Option<bool>,
}

/// The compaction a build shows, and what it stands for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CompactionInEffect {
    /// The compaction chunk's id.
    pub id: String,
    /// The last chunk it stands for.
    pub covers: String,
    /// How many chunks it folds (earlier compactions included).
    pub chunks: u64,
    /// What they cost: as its plan counted them when the chunk says
    /// (`folded`), else as this build counts them, each alone.
    pub tokens: u64,
}

/// What a stored chat's build started from (see `docs/stores.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum PreviousBuild {
    /// It extended the branch's last build (kept in the store, or by this
    /// engine): the prompt is the one a session that made every earlier
    /// build would return.
    Extended,
    /// Cold: no build of the branch is kept.
    NoneKept,
    /// Cold: the last build was made under other settings or policy.
    OtherSettings,
    /// Cold: the branch's head, as this engine opened it, does not descend
    /// from the last build's (a replaced message, saved or not, or another
    /// runtime built a longer head since).
    HeadMoved,
    /// Cold: the kept record could not be read (written by another
    /// version, damaged, or the store refused the read: the build warns).
    Unreadable,
    /// Cold, and nothing is kept: the build counts with a caller's counter,
    /// which the record cannot name, or includes unsaved chunks.
    NotKept,
}

impl BuildResult {
    /// A build of which only what the next build reads of it is known: its
    /// messages' fingerprints and its summary, as a store kept them.
    pub(crate) fn carrying(
        fingerprints: Rows<MessageFingerprint>,
        summary: Option<Summary>,
    ) -> Self {
        BuildResult {
            model: String::new(),
            encoding: String::new(),
            budget: 0,
            max_tokens: 0,
            reserve_output: 0,
            token_count: 0,
            token_count_exact: false,
            messages: Rows::new(),
            elided: None,
            trim_target: None,
            stable_prefix_tokens: None,
            cache: None,
            settings_key: None,
            summary,
            fingerprints,
            last_part: None,
            protocol: Protocol::default(),
            decisions: Rows::new(),
            unread_chunks: 0,
            applied_edits: Vec::new(),
            warnings: Vec::new(),
            previous_build: None,
            compaction: None,
            compaction_due: None,
        }
    }

    /// What the prompt would cost before trimming: its tokens, plus the
    /// elided history's and what stubs saved (by the budget or by context
    /// editing).
    pub(crate) fn untrimmed_tokens(&self) -> u64 {
        let stubbed = self.decisions.iter().map(|d| match d.decision {
            Decision::Stubbed {
                tokens_before,
                tokens_after,
                ..
            } => tokens_before.saturating_sub(tokens_after) as u64,
            _ => 0,
        });
        let elided = self.elided.map_or(0, |e| e.tokens as u64);
        self.token_count as u64 + elided + stubbed.sum::<u64>()
    }

    /// Ids of the chunks in the prompt, in order: a view of the messages'
    /// [`chunk_ids`](ContextMessage::chunk_ids).
    pub fn included(&self) -> impl DoubleEndedIterator<Item = &ChunkId> + '_ {
        self.messages.iter().flat_map(|m| m.chunk_ids.iter())
    }

    /// Ids of the chunks left out (dropped, whatever the reason), in input
    /// order: a view of the decisions.
    pub fn excluded(&self) -> impl DoubleEndedIterator<Item = &ChunkId> + '_ {
        self.decisions
            .iter()
            .filter(|d| !d.is_included())
            .map(|d| &d.id)
    }

    /// The decisions of the chunks kept with their bodies cut to their
    /// caps ([`Decision::Truncated`]), in input order: a view of the
    /// decisions.
    pub fn truncated(&self) -> impl DoubleEndedIterator<Item = &ChunkDecision> + '_ {
        self.decisions
            .iter()
            .filter(|d| matches!(d.decision, Decision::Truncated { .. }))
    }

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
}

/// The report as JSON: its fields in order, the views among them, and the
/// fields a build hands the next one left out.
impl Serialize for BuildResult {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let mut report = serializer.serialize_struct("BuildResult", 23)?;
        report.serialize_field("model", &self.model)?;
        report.serialize_field("encoding", &self.encoding)?;
        report.serialize_field("budget", &self.budget)?;
        report.serialize_field("max_tokens", &self.max_tokens)?;
        report.serialize_field("reserve_output", &self.reserve_output)?;
        report.serialize_field("token_count", &self.token_count)?;
        report.serialize_field("token_count_exact", &self.token_count_exact)?;
        report.serialize_field("messages", &self.messages)?;
        report.serialize_field("included", &Seq(|| self.included()))?;
        report.serialize_field("excluded", &Seq(|| self.excluded()))?;
        report.serialize_field(
            "truncated",
            &Seq(|| self.truncated().filter_map(truncation)),
        )?;
        optional_field(&mut report, "elided", self.elided.as_ref())?;
        optional_field(&mut report, "trim_target", self.trim_target.as_ref())?;
        let stable = self.stable_prefix_tokens.as_ref();
        optional_field(&mut report, "stable_prefix_tokens", stable)?;
        optional_field(&mut report, "cache", self.cache.as_ref())?;
        report.serialize_field("decisions", &self.decisions)?;
        let unread = Some(&self.unread_chunks).filter(|&&n| n > 0);
        optional_field(&mut report, "unread_chunks", unread)?;
        let edits = Some(&self.applied_edits).filter(|edits| !edits.is_empty());
        optional_field(&mut report, "applied_edits", edits)?;
        report.serialize_field("warnings", &self.warnings)?;
        optional_field(&mut report, "previous_build", self.previous_build.as_ref())?;
        optional_field(&mut report, "compaction", self.compaction.as_ref())?;
        optional_field(&mut report, "compaction_due", self.compaction_due.as_ref())?;
        let key = self.settings_key.map(|key| format!("{key:016x}"));
        optional_field(&mut report, "settings_key", key.as_ref())?;
        report.end()
    }
}

/// Writes `value` under `key`, or nothing when there is none.
fn optional_field<S: SerializeStruct, T: Serialize>(
    report: &mut S,
    key: &'static str,
    value: Option<&T>,
) -> std::result::Result<(), S::Error> {
    match value {
        Some(value) => report.serialize_field(key, value),
        None => report.skip_field(key),
    }
}

/// A view written as a JSON array.
struct Seq<F>(F);

impl<F, I> Serialize for Seq<F>
where
    F: Fn() -> I,
    I: Iterator,
    I::Item: Serialize,
{
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        serializer.collect_seq((self.0)())
    }
}

/// A truncated chunk as the report's `truncated` list shows it.
#[derive(Serialize)]
struct Truncation<'a> {
    id: &'a ChunkId,
    tokens_before: usize,
    tokens_after: usize,
    cap: usize,
}

/// The row of `decision` in the `truncated` list, if its chunk was kept
/// truncated.
fn truncation(decision: &ChunkDecision) -> Option<Truncation<'_>> {
    match decision.decision {
        Decision::Truncated {
            tokens_before,
            tokens_after,
            cap,
        } => Some(Truncation {
            id: &decision.id,
            tokens_before,
            tokens_after,
            cap,
        }),
        _ => None,
    }
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
    /// `o200k_base` tables are not built in (never: they all are, and load on the first
    /// count).
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
/// `o200k_base` tables are not built in (never: they all are, and load on the first
/// count).
pub(crate) fn base_tokens(result: &BuildResult) -> Result<usize> {
    let base = TiktokenCounter::new(Encoding::O200kBase)?;
    Ok(result
        .messages
        .iter()
        .map(|message| base.count(&message.content))
        .sum())
}
