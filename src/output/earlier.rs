//! The previous prompt as a [`CacheReport`](super::cache::CacheReport)
//! reads it: a whole earlier build, or [`Before`], what a session's turn
//! kept of its last build before writing over it.
//!
//! A turn writes its messages and rows into the trees it shares with the
//! last build (`Rows`); had it kept that build whole to report against, its
//! every write would copy the leaf it falls in. A turn that rewrites only a
//! few messages near the end (an edit's stubs, the grown last message)
//! keeps just those messages, their fingerprints and the old rows of the
//! chunks it changes: the report never reads the previous prompt before
//! the first message the turn writes.

use crate::Rows;
use crate::budget::{ChunkDecision, Elision};
use crate::model::chunk_id::ChunkId;
use crate::output::message::{ContextMessage, MessageFingerprint};
use crate::output::result::BuildResult;

/// What a cache report compares besides the messages: the settings a
/// prefix cache depends on, the compaction and the elision.
pub(crate) struct Head<'a> {
    pub(crate) model: &'a str,
    pub(crate) encoding: &'a str,
    pub(crate) budget: usize,
    pub(crate) settings_key: Option<u64>,
    pub(crate) compaction: Option<&'a str>,
    pub(crate) elided: Option<Elision>,
}

/// An earlier prompt, as far as a cache report reads it.
pub(crate) trait Earlier {
    /// Its settings, compaction and elision.
    fn head(&self) -> Head<'_>;
    /// How many messages it had.
    fn message_count(&self) -> usize;
    /// Tokens of its messages before message `index`.
    fn tokens_before(&self, index: usize) -> usize;
    /// Tokens of its messages from message `index` on.
    fn tokens_from(&self, index: usize) -> usize {
        self.messages_from(index).map(|m| m.tokens).sum()
    }
    /// Its messages from `index` on.
    fn messages_from(&self, index: usize) -> impl Iterator<Item = &ContextMessage>;
    /// Its messages' fingerprints from `index` on.
    fn fingerprints_from(&self, index: usize) -> impl Iterator<Item = &MessageFingerprint>;
    /// Its decision on the chunk `id`, sought from the newest (where a
    /// turn breaks the prefix, by an edit clearing the uses that left its
    /// window or by a chunk it appended, is most often near the end of a
    /// long session); `now` is the build that follows it.
    fn decision_of<'a>(&'a self, id: &ChunkId, now: &'a BuildResult) -> Option<&'a ChunkDecision>;

    /// Its message at `index`.
    fn message(&self, index: usize) -> Option<&ContextMessage> {
        self.messages_from(index).next()
    }

    /// Its fingerprint of message `index`.
    fn fingerprint(&self, index: usize) -> Option<&MessageFingerprint> {
        self.fingerprints_from(index).next()
    }
}

impl Earlier for BuildResult {
    fn head(&self) -> Head<'_> {
        Head {
            model: &self.model,
            encoding: &self.encoding,
            budget: self.budget,
            settings_key: self.settings_key,
            compaction: self.compaction.as_ref().map(|c| c.id.as_str()),
            elided: self.elided,
        }
    }

    fn message_count(&self) -> usize {
        self.messages.len()
    }

    fn tokens_before(&self, index: usize) -> usize {
        self.messages.iter().take(index).map(|m| m.tokens).sum()
    }

    /// Reads on to the end: by whole leaves, faster than row by row.
    fn tokens_from(&self, index: usize) -> usize {
        self.messages.iter().skip(index).map(|m| m.tokens).sum()
    }

    fn messages_from(&self, index: usize) -> impl Iterator<Item = &ContextMessage> {
        self.messages.iter_from(index)
    }

    fn fingerprints_from(&self, index: usize) -> impl Iterator<Item = &MessageFingerprint> {
        self.fingerprints.iter_from(index)
    }

    fn decision_of<'a>(&'a self, id: &ChunkId, _: &'a BuildResult) -> Option<&'a ChunkDecision> {
        self.decisions.iter().rev().find(|row| &row.id == id)
    }

    fn message(&self, index: usize) -> Option<&ContextMessage> {
        self.messages.get(index)
    }

    fn fingerprint(&self, index: usize) -> Option<&MessageFingerprint> {
        self.fingerprints.get(index)
    }
}

/// What a session's turn keeps of its last build before writing over it:
/// the messages from the first it writes, their fingerprints, and the old
/// rows of the chunks it changes (the other rows are the turn's own).
pub(crate) struct Before {
    /// The last build without its rows: its settings, compaction and
    /// elision.
    head: BuildResult,
    /// The first message kept, and the tokens of the messages before it.
    from: usize,
    tokens_before: usize,
    messages: Vec<ContextMessage>,
    fingerprints: Vec<MessageFingerprint>,
    /// The rows the build read.
    chunks: usize,
    /// The rows the turn writes, by chunk, as they were.
    rows: Vec<(usize, ChunkDecision)>,
}

impl Before {
    /// `last`, whose messages cost `message_tokens` in all, from message
    /// `from` on, before a turn that writes no message before `from` and,
    /// of the rows `last` read, only those of `changed`.
    pub(crate) fn keep(
        last: &BuildResult,
        (from, message_tokens): (usize, usize),
        changed: &[usize],
    ) -> Before {
        let rows = (changed.iter())
            .filter_map(|&index| Some((index, last.decisions.get(index)?.clone())))
            .collect();
        let messages: Vec<ContextMessage> = last.messages.iter_from(from).cloned().collect();
        let kept: usize = messages.iter().map(|m| m.tokens).sum();
        debug_assert_eq!(
            message_tokens,
            last.messages.iter().map(|m| m.tokens).sum::<usize>(),
            "a build's messages cost its tokens but the reply's priming"
        );
        // Its rows are dropped at once: the turn's writes copy nothing.
        let head = BuildResult {
            messages: Rows::new(),
            fingerprints: Rows::new(),
            decisions: Rows::new(),
            ..last.clone()
        };
        Before {
            head,
            from,
            tokens_before: message_tokens.saturating_sub(kept),
            messages,
            fingerprints: last.fingerprints.iter_from(from).cloned().collect(),
            chunks: last.decisions.len(),
            rows,
        }
    }

    /// The part of `from..` past the first kept message.
    fn past(&self, index: usize) -> usize {
        debug_assert!(index >= self.from, "a report reads before what was kept");
        index.saturating_sub(self.from)
    }
}

impl Earlier for Before {
    fn head(&self) -> Head<'_> {
        self.head.head()
    }

    fn message_count(&self) -> usize {
        self.from + self.messages.len()
    }

    fn tokens_before(&self, index: usize) -> usize {
        let kept = self.messages.iter().take(self.past(index));
        self.tokens_before + kept.map(|m| m.tokens).sum::<usize>()
    }

    fn messages_from(&self, index: usize) -> impl Iterator<Item = &ContextMessage> {
        self.messages.iter().skip(self.past(index))
    }

    fn fingerprints_from(&self, index: usize) -> impl Iterator<Item = &MessageFingerprint> {
        self.fingerprints.iter().skip(self.past(index))
    }

    fn decision_of<'a>(&'a self, id: &ChunkId, now: &'a BuildResult) -> Option<&'a ChunkDecision> {
        let (index, row) = newest_row(&now.decisions, self.chunks, id)?;
        let old = self.rows.iter().find(|(changed, _)| *changed == index);
        Some(old.map_or(row, |(_, row)| row))
    }
}

/// The newest of the first `len` rows of `rows` on the chunk `id`, with
/// its index.
fn newest_row<'a>(
    rows: &'a Rows<ChunkDecision>,
    len: usize,
    id: &ChunkId,
) -> Option<(usize, &'a ChunkDecision)> {
    let mut newest = rows.iter().enumerate().take(len).rev();
    newest.find(|(_, row)| &row.id == id)
}
