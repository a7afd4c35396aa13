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
//! Extending the branch's last build (see `engine::record`), it reads back
//! to that build's frontier instead, fetches its islands by node, and
//! counts the older chunks it dropped in the marker from the record: the
//! repeated cut drops them again, whatever they hold.
//!
//! It reads the whole branch instead when the settings make a chunk's fate
//! depend on more than itself (see `ContextBuilder::plans_chunks_alone`),
//! when stored counts or tallies are missing (chunks stored by an earlier
//! version, or counted under other settings), when an unread chunk may be
//! cut by a cap, or when the newest chunks never come to fill the budget.
//! It assumes each tool result comes after its call, as agents write them.

use super::ContextEngine;
use super::load::{decode_chunk, lane_of};
use super::record::BuildRecord;
use super::tally_rules::{highest_priority, without};
use crate::budget::{
    Decision, DropReason, Fate, Policy, Timeline, answered_call, call_id_of, is_compaction,
    is_read, is_tool_use, never_dropped, tool_call,
};
use crate::error::Result;
use crate::model::memory::{MemoryChunk, MemoryState};
use crate::output::result::BuildResult;
use crate::pipeline::BuildCache;
use crate::pipeline::{Outside, Pass, kept_alone_tokens, seed_counts};
use crate::store::{NodeId, PathSummary, SIZES, StoredChunk, TokenTally};
use rustc_hash::FxHashSet;

/// How many chunks the first read takes; each next read takes at least
/// twice as many.
pub(super) const FIRST_READ: usize = 512;

/// How many more chunks a read takes when the oldest ones read cut the
/// newest tool use.
const STEP_BACK: usize = 16;

/// The most protected chunks older than those read that a build fetches
/// one by one before it reads the whole branch instead.
const MOST_OLD: usize = 1_024;

impl ContextEngine {
    /// The build of the branch from its newest chunks, when one is exact;
    /// `None` when it must read every chunk. Given the branch's last build
    /// (`extending`), it reads back to that build's frontier and repeats
    /// its cut (see `engine::record`).
    pub(super) fn build_from_newest(
        &mut self,
        policy: &Policy,
        extending: Option<&BuildRecord>,
    ) -> Result<Option<NewestBuild>> {
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
        let Some(newest) = self.nodes().path_summary(&self.chat, head, &key)? else {
            return Ok(None);
        };
        let target = self.session.config().budget() as f64 * policy.low_water;
        let mut read = Newest::default();
        let mut want = match extending {
            Some(record) => (newest.position + 1).saturating_sub(record.frontier),
            None => self.first_read,
        };
        loop {
            if read.compacted.get() {
                // A compaction folds by position: what is in view is read
                // back to the chunk it covers (see `engine::compacted`).
                return self.build_compacted(policy, extending);
            }
            if !self.read_more(&mut read, head, want, &key)? {
                // Every chunk is read: the whole build costs no more.
                return Ok(None);
            }
            if let Some(call) = self.cut_unit(&read, head)? {
                // A result read answers an older call: read on to it.
                want = read.chunks.len() + read.start().saturating_sub(call);
                continue;
            }
            if !holds_newest_use(&read.chunks, newest.last_call) {
                want = read.chunks.len() + STEP_BACK;
                continue;
            }
            if let Some(record) = extending {
                if !read.ages_settled(record, policy) {
                    want = read.chunks.len() + STEP_BACK;
                    continue;
                }
                let at = (head, &newest);
                let Some(plan) = self.plan_newest(&read, at, (&key, Some(record)), policy)? else {
                    if read.compacted.get() {
                        return self.build_compacted(policy, extending);
                    }
                    return Ok(None);
                };
                return self.build_newest(&read, plan, policy, Some(record));
            }
            let plan = self.plan_newest(&read, (head, &newest), (&key, None), policy)?;
            let Some((priority, plan)) = plan.and_then(|p| Some((p.unread.priority?, p))) else {
                want = want.saturating_mul(2);
                continue;
            };
            // The chunks read must hold more than the prompt takes at or
            // above the unread chunks' priority: until they do, read as
            // many more as their rate says, a quarter over.
            let above = read.tokens_at_or_above(priority, policy);
            if (above as f64) < target {
                let per_chunk = above.max(1) as f64 / read.chunks.len() as f64;
                let needed = (target / per_chunk * 1.25) as usize;
                want = needed.clamp(want.saturating_mul(2), want.saturating_mul(16));
                continue;
            }
            if let Some(built) = self.build_newest(&read, plan, policy, None)? {
                return Ok(Some(built));
            }
            want = want.saturating_mul(2);
        }
    }

    /// Reads up to `want` chunks in all, older than those in `read`;
    /// `false` once the whole branch is read.
    fn read_more(&self, read: &mut Newest, head: NodeId, want: usize, key: &str) -> Result<bool> {
        let from = match read.stored.last() {
            None => head,
            Some(oldest) => match oldest.parent {
                Some(parent) => parent,
                None => return Ok(false),
            },
        };
        let limit = want.saturating_sub(read.stored.len()).max(1);
        let more = self.nodes().read_back(&self.chat, from, limit, Some(key))?;
        if more.is_empty() || more.last().is_some_and(|c| c.parent.is_none()) {
            return Ok(false);
        }
        let location = self.store.location();
        for stored in more {
            read.chunks
                .push(decode_chunk(stored.position, &stored, &location)?);
            read.stored.push(stored);
        }
        Ok(true)
    }

    /// The position of the oldest call, older than the chunks `read`, that
    /// a result among them answers (a result whose call is nowhere on the
    /// branch is an orphan, left out of every build alike).
    fn cut_unit(&self, read: &Newest, head: NodeId) -> Result<Option<usize>> {
        let Some(before) = read.start().checked_sub(1) else {
            return Ok(None);
        };
        let calls: rustc_hash::FxHashSet<&str> =
            read.chunks.iter().filter_map(call_id_of).collect();
        let mut oldest = None;
        for chunk in &read.chunks {
            let Some(call) = answered_call(chunk).filter(|c| !calls.contains(c)) else {
                continue;
            };
            if let Some(position) = self.nodes().find_call(&self.chat, head, call, before)? {
                oldest = Some(oldest.map_or(position, |o: usize| o.min(position)));
            }
        }
        Ok(oldest)
    }

    /// What a build from the chunks `read` keeps of the older ones, and
    /// what it leaves unread; `None` when more must be read.
    fn plan_newest(
        &self,
        read: &Newest,
        (head, newest): (NodeId, &PathSummary),
        (key, extending): (&str, Option<&BuildRecord>),
        policy: &Policy,
    ) -> Result<Option<NewestPlan>> {
        let location = self.store.location();
        let Some(before) = read.stored.last().and_then(|c| c.parent) else {
            return Ok(None);
        };
        let Some(below) = self.nodes().path_summary(&self.chat, before, key)? else {
            return Ok(None);
        };
        let latest_user = newest
            .last_user
            .filter(|_| !read.chunks.iter().any(MemoryChunk::is_user_turn));
        let Some(mut old) = self.protected_before(&below, latest_user, key)? else {
            return Ok(None);
        };
        let mut old_chunks: Vec<MemoryChunk> = old
            .iter()
            .map(|c| decode_chunk(c.position, c, &location))
            .collect::<Result<_>>()?;
        if read.chunks.iter().chain(&old_chunks).any(is_compaction) {
            read.compacted.set(true);
            return Ok(None);
        }
        // A protected tool call or result keeps its whole unit.
        let units: Vec<String> = old_chunks
            .iter()
            .filter_map(|c| tool_call(c).map(str::to_owned))
            .collect();
        for call in units {
            for (node, position, _) in
                self.nodes()
                    .unit_on_path(&self.chat, head, &call, below.position)?
            {
                if old.iter().any(|c| c.node == node) {
                    continue;
                }
                let Some(member) = self
                    .nodes()
                    .read_back(&self.chat, node, 1, Some(key))?
                    .pop()
                else {
                    return Ok(None);
                };
                old_chunks.push(decode_chunk(position, &member, &location)?);
                old.push(member);
            }
        }
        if let Some(record) = extending
            && !self.read_islands(record, read.start(), key, (&mut old, &mut old_chunks))?
        {
            return Ok(None);
        }
        let mut order: Vec<usize> = (0..old.len()).collect();
        order.sort_by_key(|&i| old[i].position);
        let old: Vec<StoredChunk> = order.iter().map(|&i| old[i].clone()).collect();
        let old_chunks: Vec<MemoryChunk> = order.iter().map(|&i| old_chunks[i].clone()).collect();
        let unread = match extending {
            Some(record) => Unread::kept(
                record,
                read,
                (below.position + 1).saturating_sub(old.len()),
                policy,
            ),
            None => self.unread_of(&below, (&old, &old_chunks), key, policy)?,
        };
        let Some(unread) = unread else {
            return Ok(None);
        };
        Ok(Some(NewestPlan {
            old,
            old_chunks,
            unread,
        }))
    }

    /// Adds to `old` the islands of the build `record` extends older than
    /// `start` (see `engine::record`), all read in one go: in its prompt,
    /// so are their units. `false` when one of them is missing.
    fn read_islands(
        &self,
        record: &BuildRecord,
        start: usize,
        key: &str,
        (old, old_chunks): (&mut Vec<StoredChunk>, &mut Vec<MemoryChunk>),
    ) -> Result<bool> {
        let held: FxHashSet<NodeId> = old.iter().map(|c| c.node).collect();
        let wanted: Vec<NodeId> = (record.islands.iter())
            .filter(|node| !held.contains(node))
            .copied()
            .collect();
        // Ancestors of the record's head, which the branch's head descends
        // from: on its path, at positions older than the frontier that its
        // build kept and no other chunk read holds.
        let islands = self.nodes().read_nodes(&self.chat, &wanted, Some(key))?;
        let taken: FxHashSet<usize> = old.iter().map(|c| c.position).collect();
        let distinct = islands.windows(2).all(|w| w[0].position < w[1].position);
        let fit = islands.iter().all(|c| {
            c.position < record.frontier
                && record.mark(c.position) != Fate::Dropped
                && !taken.contains(&c.position)
        });
        if islands.len() != wanted.len() || !distinct || !fit {
            return Ok(false);
        }
        let location = self.store.location();
        for island in islands.into_iter().filter(|c| c.position < start) {
            old_chunks.push(decode_chunk(island.position, &island, &location)?);
            old.push(island);
        }
        Ok(true)
    }

    /// The chunks on the path to `below` but those in `old`, counted from
    /// the path's tallies; `None` when they are missing.
    fn unread_of(
        &self,
        below: &PathSummary,
        (old, old_chunks): (&[StoredChunk], &[MemoryChunk]),
        key: &str,
        policy: &Policy,
    ) -> Result<Option<Unread>> {
        let mut old_tokens = TokenTally::default();
        for chunk in old {
            match self.own_tokens(chunk, key)? {
                Some(own) => old_tokens = old_tokens.plus(&own),
                None => return Ok(None),
            }
        }
        Ok(Unread::of(below, (old_chunks, old_tokens), policy))
    }

    /// The build of the old chunks `plan` keeps and the chunks `read`, with
    /// the unread ones in the marker, if it is exact: extending the last
    /// build, because its cut drops every unread chunk again; else if the
    /// budget dropped a unit that comes after every unread one.
    fn build_newest(
        &self,
        read: &Newest,
        plan: NewestPlan,
        policy: &Policy,
        extending: Option<&BuildRecord>,
    ) -> Result<Option<NewestBuild>> {
        let NewestPlan {
            old,
            old_chunks,
            unread,
        } = plan;
        let start = read.start();
        let mut state = lane_of(self.held());
        state.chunks = old_chunks;
        state.chunks.extend(read.chunks.iter().rev().cloned());
        let planned: Vec<&StoredChunk> = old.iter().chain(read.stored.iter().rev()).collect();
        // The marker goes where the oldest dropped chunk was.
        let first_unread = (0..start)
            .filter(|p| extending.is_none_or(|r| r.mark(*p) == Fate::Dropped))
            .find(|p| old.iter().all(|c| c.position != *p))
            .unwrap_or(start);
        // An orphan result is in no prompt: when the oldest unread chunk
        // may be one, the marker's place among the old chunks kept after
        // it is not known.
        let orphans = unread.unread > unread.chunks;
        let kept_after = || (old.iter()).any(|c| (first_unread..start).contains(&c.position));
        if extending.is_none() && orphans && kept_after() {
            return Ok(None);
        }
        let outside = Outside {
            chunks: unread.chunks,
            tokens: usize::try_from(unread.tokens).unwrap_or(usize::MAX),
            marker_before: old.iter().filter(|c| c.position < first_unread).count(),
        };
        let (mut result, positions) =
            self.build_read(&state, &planned, (policy, extending), outside)?;
        if extending.is_none() && !dropped_past(&result, unread.priority) {
            return Ok(None);
        }
        result.unread_chunks = unread.unread;
        Ok(Some(NewestBuild {
            result,
            positions,
            chunks: state.chunks,
            unread: (start, (outside.chunks, outside.tokens)),
        }))
    }

    /// The build of `state` (the lane and the chunks read, in path order,
    /// as `stored` holds them, one each), seeded with their stored counts,
    /// repeating the cut of the branch's last build (`extending`) by
    /// position; with the chunks' positions and nodes.
    pub(super) fn build_read(
        &self,
        state: &MemoryState,
        stored: &[&StoredChunk],
        (policy, extending): (&Policy, Option<&BuildRecord>),
        outside: Outside,
    ) -> Result<(BuildResult, Vec<(usize, NodeId)>)> {
        state.validate()?;
        let config = self.session.config();
        let mut cache = BuildCache::default();
        let seeds =
            (stored.iter().enumerate()).filter_map(|(i, c)| Some((i, c.counts.as_deref()?)));
        seed_counts(config.build_settings(), seeds, &mut cache);
        let positions: Vec<(usize, NodeId)> = stored.iter().map(|c| (c.position, c.node)).collect();
        let previous = extending.map(|record| {
            record.resumed_with(positions.iter().map(|&(p, _)| record.mark(p)).collect())
        });
        let pass = Pass {
            policy,
            previous: previous.as_ref(),
            cache: &mut cache,
            outside,
        };
        Ok((config.build_with(state, pass)?, positions))
    }

    /// What `chunk` adds to its path's token tally (nothing for an orphan
    /// result), if the tallies are stored.
    fn own_tokens(&self, chunk: &StoredChunk, key: &str) -> Result<Option<TokenTally>> {
        let Some(with) = self.nodes().path_summary(&self.chat, chunk.node, key)? else {
            return Ok(None);
        };
        let without = match chunk.parent {
            Some(parent) => match self.nodes().path_summary(&self.chat, parent, key)? {
                Some(summary) => summary.tokens,
                None => return Ok(None),
            },
            None => Some(TokenTally::default()),
        };
        Ok(with.tokens.zip(without).map(|(w, o)| w.minus(&o)))
    }

    /// The chunks older than those read that a build keeps whatever the
    /// budget: the protected ones on the path to `below`, and the latest
    /// user message if it is that old; oldest first. `None` when there are
    /// too many.
    pub(super) fn protected_before(
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
            let Some(chunk) = self
                .nodes()
                .read_back(&self.chat, node, 1, Some(key))?
                .pop()
            else {
                return Ok(None);
            };
            next = match chunk.parent {
                Some(parent) => self
                    .nodes()
                    .path_summary(&self.chat, parent, key)?
                    .and_then(|s| s.last_protected),
                None => None,
            };
            old.push(chunk);
        }
        if let Some(user) = latest_user.filter(|u| old.iter().all(|c| c.node != *u)) {
            match self
                .nodes()
                .read_back(&self.chat, user, 1, Some(key))?
                .pop()
            {
                Some(chunk) => old.push(chunk),
                None => return Ok(None),
            }
        }
        old.sort_by_key(|c| c.position);
        Ok(Some(old))
    }
}

/// Whether the budget dropped a unit that comes after every unread chunk
/// (of at most `priority`) in the order units are dropped: then it dropped
/// every unread one too.
fn dropped_past(result: &BuildResult, priority: Option<i64>) -> bool {
    let Some(priority) = priority else {
        return false;
    };
    result.decisions.iter().any(|d| {
        d.priority >= priority
            && matches!(
                d.decision,
                Decision::Dropped {
                    reason: DropReason::Budget
                }
            )
    })
}

/// A build from the newest chunks: the result, the stored position and
/// the chunk of each decision, and the position of the oldest chunk read
/// with how many older ones it counted as dropped, and their tokens.
pub(super) struct NewestBuild {
    pub(super) result: BuildResult,
    pub(super) positions: Vec<(usize, NodeId)>,
    pub(super) chunks: Vec<MemoryChunk>,
    pub(super) unread: (usize, (usize, usize)),
}

/// The newest chunks read so far, newest first, as stored and as read.
#[derive(Default)]
struct Newest {
    stored: Vec<StoredChunk>,
    chunks: Vec<MemoryChunk>,
    /// Whether a compaction was found among the chunks read or the
    /// protected ones older than them: what it folds is found by
    /// position, from the whole branch (see `budget::fold`).
    compacted: std::cell::Cell<bool>,
}

impl Newest {
    /// The position of the oldest chunk read.
    fn start(&self) -> usize {
        self.stored.last().map_or(0, |c| c.position)
    }

    /// Whether the chunks read hold enough model calls that every older
    /// island the `record` names is as old as the branch says: tool results
    /// older than the last `recent_turns` steps may be stubbed, and the
    /// steps among the unread chunks are not counted.
    fn ages_settled(&self, record: &BuildRecord, policy: &Policy) -> bool {
        if record.islands.is_empty() {
            return true;
        }
        let mut timeline = Timeline::default();
        for (index, chunk) in self.chunks.iter().rev().enumerate() {
            timeline.push(index, chunk);
        }
        // One step of slack: the window's first step may start at its
        // first chunk only because the chunk before it is unread.
        timeline.steps_after(0) > policy.recent_turns
    }

    /// Tokens of the unprotected chunks read whose priority is `priority`
    /// or more, as stored.
    fn tokens_at_or_above(&self, priority: i64, policy: &Policy) -> u64 {
        let pairs = self.stored.iter().zip(&self.chunks);
        pairs
            .filter(|(_, chunk)| !never_dropped(chunk) && policy.priority_of(chunk) >= priority)
            .filter_map(|(stored, _)| kept_alone_tokens(stored.counts.as_deref()?))
            .sum()
    }
}

/// What a build from the newest chunks keeps of the older ones, and what
/// it leaves unread.
struct NewestPlan {
    old: Vec<StoredChunk>,
    old_chunks: Vec<MemoryChunk>,
    unread: Unread,
}

/// The unread chunks: how many, how many of them the budget drops (all
/// but orphan results), their tokens, and the highest priority among them.
struct Unread {
    unread: usize,
    chunks: usize,
    tokens: u64,
    /// `None` when none is dropped.
    priority: Option<i64>,
}

impl Unread {
    /// The chunks older than those `read` but the `unread` ones fetched,
    /// as the kept `record` counted them: every one older than its
    /// frontier it dropped, but those read since. `None` when one of those
    /// may be cut by a cap, or their counts are missing.
    fn kept(record: &BuildRecord, read: &Newest, unread: usize, policy: &Policy) -> Option<Self> {
        let (mut chunks, mut tokens) = record.dropped;
        let cap = policy.caps.smallest();
        let read_since = (read.stored.iter())
            .filter(|c| c.position < record.frontier && record.mark(c.position) == Fate::Dropped);
        for stored in read_since {
            let whole = usize::try_from(kept_alone_tokens(stored.counts.as_deref()?)?).ok()?;
            if cap.is_some_and(|cap| whole > cap) {
                return None;
            }
            chunks = chunks.checked_sub(1)?;
            tokens = tokens.checked_sub(whole)?;
        }
        Some(Unread {
            unread,
            chunks,
            tokens: tokens as u64,
            priority: None,
        })
    }

    /// The chunks on the path to `below` but those in `old`; `None` when
    /// the tallies are missing or one of them may be cut by a cap.
    fn of(
        below: &PathSummary,
        (old_chunks, old_tokens): (&[MemoryChunk], TokenTally),
        policy: &Policy,
    ) -> Option<Unread> {
        let (mut classes, tokens) = (below.classes?, below.tokens?);
        for chunk in old_chunks {
            if !never_dropped(chunk) {
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
        let unread = (below.position + 1).checked_sub(old_chunks.len())?;
        // Orphan results are in no prompt, and not among the dropped.
        let chunks = unread.checked_sub(usize::try_from(classes.orphans).ok()?)?;
        Some(Unread {
            unread,
            chunks,
            tokens: tokens.total,
            priority: highest_priority(&classes, policy),
        })
    }
}

/// Whether `chunks` (newest first) hold the newest tool use whole: the
/// step of their newest call starts after a chunk among them; with no call
/// among them, whether the path has none.
fn holds_newest_use(chunks: &[MemoryChunk], last_call: Option<NodeId>) -> bool {
    match chunks.iter().position(is_tool_use) {
        Some(call) => chunks[call + 1..].iter().any(is_read),
        None => last_call.is_none(),
    }
}
