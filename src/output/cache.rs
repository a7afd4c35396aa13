//! [`CacheReport`]: how much of the previous build's prompt a provider's
//! prefix cache can serve in this one, and, when the prefix broke, where
//! and why.

use serde::Serialize;

use crate::budget::{ChunkDecision, Decision, DropReason, StubReason};
use crate::model::chunk_id::ChunkId;
use crate::model::roles::Role;
use crate::output::earlier::Earlier;
use crate::output::message::{ContextMessage, MessageFingerprint, content_hash};
use crate::output::result::BuildResult;
use crate::tokens::parts::SEPARATOR;

/// What a build shares with the previous one, as a prompt cache sees it
/// (the report's `"cache"`; see `docs/sessions.md`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct CacheReport {
    /// Tokens at the start of the prompt byte-identical to the previous
    /// one's, [`BuildResult::stable_prefix_tokens`]; 0 when the model
    /// changed, whose cache another model does not share.
    pub stable_prefix_tokens: usize,
    /// Where the previous prompt stopped being a prefix of this one, and
    /// why; `None` when all of it carried over (its last message may have
    /// grown).
    pub broke_at: Option<CacheBreak>,
}

/// Where a prompt's cached prefix broke.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct CacheBreak {
    /// The first message (0-based, in this build's messages) that differs
    /// from the previous build's message at that place.
    pub message: usize,
    /// The chunk where the prompts differ from `message` on: where their
    /// chunk ids first differ, the previous prompt's chunk if it left the
    /// prompt, else the one that came in before it; when the ids agree,
    /// the first chunk of the message whose text or decision changed.
    /// `None` when none did (the fragments, the system prompt).
    pub chunk: Option<ChunkId>,
    /// Why.
    pub cause: BreakCause,
    /// Tokens of the previous prompt after the break: what a prefix cache
    /// held that this prompt pays for again, or no longer sends.
    pub tokens_lost: usize,
}

/// Why a prompt's cached prefix broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum BreakCause {
    /// The window refilled: the budget trimmed the history (to the
    /// low-water mark), dropping or stubbing what the previous prompt held.
    Refilled,
    /// A `context_management` edit cleared something the previous prompt held.
    ContextEdit,
    /// A new compaction folded what the previous prompt held.
    Compaction,
    /// The system message changed: the system prompt, the fragments or a
    /// system chunk.
    SystemChanged,
    /// A chunk the previous prompt held changed, left the input, or one
    /// was put before others (the break's `chunk` names it).
    ChunkChanged,
    /// The model, the budget or a setting that shapes the prompt changed.
    SettingsChanged,
}

impl BuildResult {
    /// What this build shares with `previous` (an earlier build of the same
    /// session), as a provider's prefix cache sees it: the tokens it can
    /// serve, and where and why the prefix broke. A session's builds (and
    /// a builder's, given [`previous`](crate::ContextBuilder::previous))
    /// carry it in [`cache`](BuildResult::cache).
    ///
    /// Costs a walk of the messages up to the break; the cause reads the
    /// decisions of the chunk there.
    pub fn cache_since(&self, previous: &BuildResult) -> CacheReport {
        let stable = stable_prefix(
            &self.messages,
            &self.fingerprints,
            previous.fingerprints.iter(),
        );
        self.cache_over(previous, stable)
    }

    /// [`cache_since`](BuildResult::cache_since) for a build that counted
    /// its stable prefix over `previous` already (`stable_prefix_tokens`).
    pub(crate) fn cache_over(&self, previous: &BuildResult, stable: usize) -> CacheReport {
        self.cache_after(previous, stable, Unchanged::default())
    }

    /// [`cache_over`](BuildResult::cache_over) for a build whose first
    /// messages are known to be `previous`'s, `unchanged`: its scans start
    /// after them.
    pub(crate) fn cache_after(
        &self,
        previous: &impl Earlier,
        stable: usize,
        unchanged: Unchanged,
    ) -> CacheReport {
        let sent = unchanged.tokens + previous.tokens_from(unchanged.messages);
        // A provider caches a prefix for one model: nothing carries over.
        let head = previous.head();
        if (head.model, head.encoding) != (self.model.as_str(), self.encoding.as_str()) {
            let broke_at = (previous.message_count() > 0).then_some(CacheBreak {
                message: 0,
                chunk: None,
                cause: BreakCause::SettingsChanged,
                tokens_lost: sent,
            });
            return CacheReport {
                stable_prefix_tokens: 0,
                broke_at,
            };
        }
        let stable_prefix_tokens = stable;
        let broke_at = first_break(previous, self, unchanged.messages).map(|message| {
            let chunk = chunk_at(previous, self, message);
            CacheBreak {
                message,
                cause: cause_of(previous, self, message, chunk.as_ref()),
                chunk,
                tokens_lost: sent.saturating_sub(stable_prefix_tokens),
            }
        });
        CacheReport {
            stable_prefix_tokens,
            broke_at,
        }
    }
}

/// Tokens at the start of `messages` (fingerprinted as `fingerprints`)
/// byte-identical to the messages fingerprinted as `old`, as far as a
/// provider's prefix cache can tell: every leading message that is
/// unchanged (framing included), then, when the next message only grew
/// (same role, its old content then a separator then more), the content
/// tokens of its old parts. A lower bound: the framing of a grown message
/// is not counted.
pub(crate) fn stable_prefix<'a>(
    messages: &crate::Rows<ContextMessage>,
    fingerprints: &crate::Rows<MessageFingerprint>,
    old: impl Iterator<Item = &'a MessageFingerprint>,
) -> usize {
    stable_prefix_after(messages, fingerprints, old, Unchanged::default())
}

/// The first messages of a build known to be the previous build's,
/// unchanged, and their tokens: a scan for what the two share starts after
/// them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Unchanged {
    pub(crate) messages: usize,
    pub(crate) tokens: usize,
}

/// [`stable_prefix`] when the first messages are known to be `unchanged`;
/// `old` starts after them.
pub(crate) fn stable_prefix_after<'a>(
    messages: &crate::Rows<ContextMessage>,
    fingerprints: &crate::Rows<MessageFingerprint>,
    old: impl Iterator<Item = &'a MessageFingerprint>,
    unchanged: Unchanged,
) -> usize {
    let mut stable = unchanged.tokens;
    let skip = unchanged.messages;
    let new = messages.iter_from(skip).zip(fingerprints.iter_from(skip));
    for ((new, print), old) in new.zip(old) {
        if print.role != old.role {
            break;
        }
        if print.len == old.len && print.hash == old.hash {
            stable += new.tokens;
            continue;
        }
        if grew(new, old) {
            stable += old.growable;
        }
        break;
    }
    stable
}

/// Whether `message` is the message `old` fingerprints with parts
/// appended: its old content, a separator, more.
fn grew(message: &ContextMessage, old: &MessageFingerprint) -> bool {
    let content = message.content.as_str();
    message.role == old.role
        && content.len() > old.len
        && content.is_char_boundary(old.len)
        && content[old.len..].starts_with(SEPARATOR)
        && content_hash(&content[..old.len]) == old.hash
}

/// The first message of `current` that breaks `previous`'s prefix: one
/// that differs from the previous message at its place, unless it is the
/// previous prompt's last message grown. `None` when every previous
/// message carried over. The first `from` are known to carry over.
fn first_break(previous: &impl Earlier, current: &BuildResult, from: usize) -> Option<usize> {
    let same = |(print, old): (&MessageFingerprint, &MessageFingerprint)| {
        print.role == old.role && print.len == old.len && print.hash == old.hash
    };
    let new = current.fingerprints.iter_from(from);
    let matching = new
        .zip(previous.fingerprints_from(from))
        .take_while(|&p| same(p));
    let index = from + matching.count();
    let count = previous.message_count();
    let last_grew = index + 1 == count
        && (current.messages.get(index))
            .zip(previous.fingerprint(index))
            .is_some_and(|(m, old)| grew(m, old));
    (index < count && !last_grew).then_some(index)
}

/// The chunk where the prompts differ from message `index` on: at the
/// first place their chunk ids differ, the previous prompt's chunk if it
/// left the prompt, else the chunk that came in before it; when the ids
/// agree, the first chunk of message `index` whose text or decision
/// changed. `None` when none did (the fragments, a marker).
fn chunk_at(previous: &impl Earlier, current: &BuildResult, index: usize) -> Option<ChunkId> {
    fn ids_of(m: &ContextMessage) -> std::slice::Iter<'_, ChunkId> {
        m.chunk_ids.iter()
    }
    let mut old_ids = previous.messages_from(index).flat_map(ids_of);
    let mut new_ids = current.messages.iter_from(index).flat_map(ids_of);
    loop {
        match (old_ids.next(), new_ids.next()) {
            (Some(old), Some(new)) if old == new => {}
            (Some(old), Some(new)) => {
                let stayed = decision_of(current, old).is_some_and(ChunkDecision::is_included);
                return Some(if stayed { new } else { old }.clone());
            }
            // The new prompt ends first: its next chunk left.
            (Some(old), None) => return Some(old.clone()),
            (None, _) => break,
        }
    }
    let (old, new) = (previous.message(index)?, current.messages.get(index)?);
    let texts = old.chunk_texts().zip(new.chunk_texts());
    let edited = texts
        .filter(|((a, _), (b, _))| a == b)
        .find(|((_, a), (_, b))| a != b);
    if let Some(((id, _), _)) = edited {
        return Some(id.clone());
    }
    let changed = |id: &&ChunkId| previous.decision_of(id, current) != decision_of(current, id);
    old.chunk_ids.iter().find(changed).cloned()
}

/// The decision on the chunk `id` in `result`, if it read one.
fn decision_of<'a>(result: &'a BuildResult, id: &ChunkId) -> Option<&'a ChunkDecision> {
    result.decision_of(id, result)
}

/// Why message `index` broke the prefix, `chunk` being where.
fn cause_of(
    previous: &impl Earlier,
    current: &BuildResult,
    index: usize,
    chunk: Option<&ChunkId>,
) -> BreakCause {
    let (old, new) = (previous.head(), current.head());
    let other_key = matches!((old.settings_key, new.settings_key), (Some(o), Some(n)) if o != n);
    if other_key || (old.model, old.budget) != (new.model, new.budget) {
        return BreakCause::SettingsChanged;
    }
    let is_system = |m: Option<&ContextMessage>| m.is_some_and(|m| m.role == Role::System);
    if is_system(previous.message(index)) || is_system(current.messages.get(index)) {
        return BreakCause::SystemChanged;
    }
    if new.compaction.is_some() && new.compaction != old.compaction {
        return BreakCause::Compaction;
    }
    let now = chunk
        .and_then(|id| decision_of(current, id))
        .map(|d| d.decision);
    match now {
        Some(
            Decision::Stubbed {
                reason: StubReason::ClearToolUses,
                ..
            }
            | Decision::Dropped {
                reason: DropReason::ClearThinking,
            },
        ) => BreakCause::ContextEdit,
        Some(
            Decision::Stubbed {
                reason: StubReason::Budget,
                ..
            }
            | Decision::Dropped {
                reason: DropReason::Budget,
            },
        ) => BreakCause::Refilled,
        Some(Decision::Dropped {
            reason: DropReason::Compacted,
        }) => BreakCause::Compaction,
        _ if chunk.is_none() && old.elided != new.elided => BreakCause::Refilled,
        _ => BreakCause::ChunkChanged,
    }
}

impl BreakCause {
    /// The cause's name as the report writes it: `refilled`.
    pub fn as_str(self) -> &'static str {
        match self {
            BreakCause::Refilled => "refilled",
            BreakCause::ContextEdit => "context_edit",
            BreakCause::Compaction => "compaction",
            BreakCause::SystemChanged => "system_changed",
            BreakCause::ChunkChanged => "chunk_changed",
            BreakCause::SettingsChanged => "settings_changed",
        }
    }

    /// The cause in words, for a person.
    pub fn describe(self) -> &'static str {
        match self {
            BreakCause::Refilled => "the window refilled: the budget trimmed the history",
            BreakCause::ContextEdit => "a context_management edit cleared what the prompt held",
            BreakCause::Compaction => "a new compaction folded what the prompt held",
            BreakCause::SystemChanged => {
                "the system message changed (system prompt, fragments or a system chunk)"
            }
            BreakCause::ChunkChanged => "a chunk changed, left the input, or came in before others",
            BreakCause::SettingsChanged => "the model, the budget or a setting changed",
        }
    }
}

impl CacheBreak {
    /// The break in words: where, why and what it costs.
    pub fn describe(&self) -> String {
        let chunk = match &self.chunk {
            Some(id) => format!(" (chunk {:?})", id.as_str()),
            None => String::new(),
        };
        format!(
            "the prefix broke at message {}{chunk}: {}; {} tokens of the previous prompt are lost",
            self.message,
            self.cause.describe(),
            self.tokens_lost
        )
    }
}
