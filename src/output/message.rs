//! [`ContextMessage`]: one message of a build's prompt; and what a build
//! hands the next of each message (its fingerprint) and of its cut (its
//! summary).

use std::hash::Hasher;

use serde::Serialize;

use crate::model::chunk_id::{ChunkId, ChunkIds};
use crate::model::roles::Role;
use crate::model::rows::Rows;
use crate::output::message_text::MessageText;

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
    /// Where each chunk's text sits in `content`, one span per chunk id
    /// (empty when unknown: a report read back from JSON).
    #[serde(skip)]
    pub(crate) spans: ChunkSpans,
}

/// Byte ranges of a message's chunks in its content.
pub(crate) type ChunkSpans = smallvec::SmallVec<[std::ops::Range<usize>; 4]>;

impl ContextMessage {
    /// Each chunk of the message with its rendered text (tag, body and
    /// attributes, as the prompt holds it), in order. Empty for a message
    /// of a report read back from JSON, which does not say where each
    /// chunk's text ends.
    pub fn chunk_texts(&self) -> impl Iterator<Item = (&ChunkId, &str)> + '_ {
        let spans = self.spans.iter().map(|span| &self.content[span.clone()]);
        self.chunk_ids.iter().zip(spans)
    }
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

/// The hash a [`MessageFingerprint`] keeps of a message's content.
pub(crate) fn content_hash(content: &str) -> u64 {
    let mut hasher = rustc_hash::FxHasher::default();
    hasher.write(content.as_bytes());
    hasher.finish()
}
