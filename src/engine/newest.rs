//! Building a stored chat from its newest chunks.
//!
//! A cold build drops whole units by priority, then age, until the prompt
//! fits. Once the newest chunks hold more than the budget at or above the
//! highest priority any older unprotected chunk has, every older one is
//! dropped whatever it holds: the build reads the newest chunks, the
//! protected ones wherever they sit (the latest user message, pinned,
//! `critical` and system chunks, found through the store's path tallies),
//! and counts the rest in the elided-history marker from the path's
//! stored token tally, unread. The prompt is the one a build of the whole
//! branch makes; the report's `decisions` and `excluded` list the chunks
//! read, and `unread_chunks` says how many were not.
//!
//! It reads the whole branch instead when the settings make a chunk's fate
//! depend on more than itself (see `ContextBuilder::plans_chunks_alone`),
//! when stored counts or tallies are missing (chunks stored by an earlier
//! version, or counted under other settings), when an unread chunk may be
//! cut by a cap, or when the newest chunks never come to fill the budget.
//! It assumes each tool result comes after its call, as agents write them.

use super::ContextEngine;
use super::load::{decode_chunk, lane_of};
use super::tally::{highest_priority, meta_of, without};
use crate::budget::{Decision, DropReason, Policy, is_read, tool_call};
use crate::builder::{Outside, Pass, kept_alone_tokens};
use crate::chunk_cache::ChunkCache;
use crate::error::Result;
use crate::memory::MemoryChunk;
use crate::message::BuildResult;
use crate::roles::ChunkKind;
use crate::store::{NodeId, PathSummary, SIZES, StoredChunk, TokenTally};

/// How many chunks the first read takes; each next read takes four times
/// as many.
pub(super) const FIRST_READ: usize = 512;

/// The most protected chunks older than those read that a build fetches
/// one by one before it reads the whole branch instead.
const MOST_OLD: usize = 1_024;

impl ContextEngine {
    /// The build of the branch from its newest chunks, when one is exact;
    /// `None` when it must read every chunk.
    pub(super) fn build_from_newest(&mut self, policy: &Policy) -> Result<Option<BuildResult>> {
        let (Some(head), Some(key)) = (self.head, self.session.count_key()) else {
            return Ok(None);
        };
        let settings = self.session.config().settings();
        if self.nodes.is_some()
            || self.has_pending()
            || !settings.plans_chunks_alone(policy, self.held())
        {
            return Ok(None);
        }
        let Some(newest) = self.store.path_summary(&self.chat, head, &key)? else {
            return Ok(None);
        };
        let mut read: Vec<StoredChunk> = Vec::new();
        let mut want = self.first_read;
        loop {
            let from = match read.last() {
                None => head,
                Some(oldest) => match oldest.parent {
                    Some(parent) => parent,
                    None => return Ok(None),
                },
            };
            let more = self
                .store
                .read_back(&self.chat, from, want - read.len(), Some(&key))?;
            if more.is_empty() || more.last().is_some_and(|c| c.parent.is_none()) {
                // Every chunk is read: the whole build costs no more.
                return Ok(None);
            }
            read.extend(more);
            if let Some(result) = self.try_newest(&read, &newest, &key, policy)? {
                return Ok(Some(result));
            }
            want = want.saturating_mul(4);
        }
    }

    /// The build from the chunks `read` (newest first), if it is exact.
    fn try_newest(
        &self,
        read: &[StoredChunk],
        newest: &PathSummary,
        key: &str,
        policy: &Policy,
    ) -> Result<Option<BuildResult>> {
        let location = self.store.location();
        let (Some(oldest), Some(before)) = (read.last(), read.last().and_then(|c| c.parent)) else {
            return Ok(None);
        };
        let start = oldest.position;
        let suffix: Vec<MemoryChunk> = read
            .iter()
            .rev()
            .map(|c| decode_chunk(c.position, c, &location))
            .collect::<Result<_>>()?;
        if splits_a_unit(&suffix) || !holds_newest_use(&suffix, newest.last_call) {
            return Ok(None);
        }
        let Some(below) = self.store.path_summary(&self.chat, before, key)? else {
            return Ok(None);
        };
        let latest_user = newest
            .last_user
            .filter(|_| !suffix.iter().any(MemoryChunk::is_user_turn));
        let Some(old) = self.protected_before(&below, latest_user, key)? else {
            return Ok(None);
        };
        let old_chunks: Vec<MemoryChunk> = old
            .iter()
            .map(|c| decode_chunk(c.position, c, &location))
            .collect::<Result<_>>()?;
        let Some(unread) = Unread::of(&below, &old, &old_chunks, policy) else {
            return Ok(None);
        };
        let mut state = lane_of(self.held());
        state.chunks = old_chunks;
        state.chunks.extend(suffix);
        state.validate()?;
        let config = self.session.config();
        let mut cache = ChunkCache::default();
        let seeds = old.iter().chain(read.iter().rev()).map(|c| c.counts.as_deref());
        let seeds: Vec<(usize, &str)> =
            seeds.enumerate().filter_map(|(i, c)| Some((i, c?))).collect();
        config.settings().seed_counts(seeds, &mut cache);
        let first_unread = (0..start)
            .find(|p| old.iter().all(|c| c.position != *p))
            .unwrap_or(start);
        let outside = Outside {
            chunks: unread.chunks,
            tokens: usize::try_from(unread.tokens).unwrap_or(usize::MAX),
            marker_before: old.iter().filter(|c| c.position < first_unread).count(),
        };
        let pass = Pass {
            policy,
            previous: None,
            cache: &mut cache,
            outside,
        };
        let mut result = config.build_with(&state, pass)?;
        // Exact only if the budget dropped a unit that comes after every
        // unread one in the order units are dropped.
        let past_unread = result.decisions.iter().any(|d| {
            d.priority >= unread.priority
                && matches!(
                    d.decision,
                    Decision::Dropped {
                        reason: DropReason::Budget
                    }
                )
        });
        if !past_unread {
            return Ok(None);
        }
        result.unread_chunks = unread.chunks;
        Ok(Some(result))
    }

    /// The chunks older than those read that a build keeps whatever the
    /// budget: the protected ones on the path to `below`, and the latest
    /// user message if it is that old; oldest first. `None` when there are
    /// too many, or one belongs to a tool unit.
    fn protected_before(
        &self,
        below: &PathSummary,
        latest_user: Option<NodeId>,
        key: &str,
    ) -> Result<Option<Vec<StoredChunk>>> {
        let mut old: Vec<StoredChunk> = Vec::new();
        let mut next = below.last_protected;
        while let Some(node) = next {
            if old.len() >= MOST_OLD {
                return Ok(None);
            }
            let Some(chunk) = self.store.read_back(&self.chat, node, 1, Some(key))?.pop() else {
                return Ok(None);
            };
            next = match chunk.parent {
                Some(parent) => self
                    .store
                    .path_summary(&self.chat, parent, key)?
                    .and_then(|s| s.last_protected),
                None => None,
            };
            old.push(chunk);
        }
        if let Some(user) = latest_user.filter(|u| old.iter().all(|c| c.node != *u)) {
            match self.store.read_back(&self.chat, user, 1, Some(key))?.pop() {
                Some(chunk) => old.push(chunk),
                None => return Ok(None),
            }
        }
        old.sort_by_key(|c| c.position);
        Ok(Some(old))
    }
}

/// The unread chunks: how many, their tokens, and the highest priority
/// among them.
struct Unread {
    chunks: usize,
    tokens: u64,
    priority: i64,
}

impl Unread {
    /// The chunks on the path to `below` but those in `old`; `None` when
    /// the tallies are missing or one of them may be cut by a cap.
    fn of(
        below: &PathSummary,
        old: &[StoredChunk],
        old_chunks: &[MemoryChunk],
        policy: &Policy,
    ) -> Option<Unread> {
        let (mut classes, tokens) = (below.classes?, below.tokens?);
        let mut old_tokens = TokenTally::default();
        for (stored, chunk) in old.iter().zip(old_chunks) {
            if tool_call(chunk).is_some() {
                return None;
            }
            old_tokens = old_tokens.with(kept_alone_tokens(stored.counts.as_deref()?)?);
            if !meta_of(chunk).protected {
                classes = without(classes, chunk);
            }
        }
        let tokens = tokens.minus(&old_tokens);
        if let Some(cap) = policy.caps.smallest() {
            let size = SIZES.iter().rposition(|&size| size <= cap as u64)?;
            if tokens.over[size] > 0 {
                return None;
            }
        }
        let chunks = (below.position + 1).checked_sub(old.len())?;
        Some(Unread {
            chunks,
            tokens: tokens.total,
            priority: highest_priority(&classes, policy)?,
        })
    }
}

/// Whether a tool result among `chunks` answers a call that is not.
fn splits_a_unit(chunks: &[MemoryChunk]) -> bool {
    let mut calls = rustc_hash::FxHashSet::default();
    chunks.iter().any(|chunk| match chunk.kind {
        ChunkKind::Workflow => {
            calls.extend(chunk.call_id.as_deref());
            false
        }
        ChunkKind::Environment => chunk.call_id.as_deref().is_some_and(|c| !calls.contains(c)),
        _ => false,
    })
}

/// Whether `chunks` hold the newest tool use whole: the step of their
/// newest call starts after a chunk among them; with no call among them,
/// whether the path has none.
fn holds_newest_use(chunks: &[MemoryChunk], last_call: Option<NodeId>) -> bool {
    match chunks.iter().rposition(|c| c.kind == ChunkKind::Workflow) {
        Some(call) => chunks[..call].iter().any(is_read),
        None => last_call.is_none(),
    }
}
