//! A session's turn that only appended chunks since its last build, made
//! by extending that build: its cost is the new chunks' (and the rows of
//! the latest turn, whose protection moves), not the session's.
//!
//! Given the last build as previous, the pipeline first tries the last
//! cut, and keeps it when it fits. Applied to the grown session, that cut
//! leaves every old chunk as it was: protection only ever lifts (the latest
//! user turn moves forward; pinned and critical chunks stay so), so each
//! unit the last build cut is still cut and each chunk it stubbed still
//! stubbed, and the new chunks, in no unit of the old ones, stay whole
//! (but for what a `clear_tool_uses` edit stubs, below).
//! So when the last build's messages with the new chunks appended fit the
//! budget, they are the pipeline's result, byte for byte; `tests/it/session.rs`
//! holds the two equal on random sessions. When they do not fit, the cuts
//! the plan would add are made in place when they are few and simple
//! ([`trim`](super::trim)); otherwise, or when a unit whose protection
//! lifts reaches back before the last turn, the plan runs again over the
//! last prompt ([`replan`](super::replan)). Under a lone
//! `clear_tool_uses` edit, the uses leaving `keep`'s window are stubbed in
//! place ([`clear`](super::clear)). Everything else runs the full
//! pipeline: other edits, removals, a custom renderer that is
//! not [deterministic](crate::render::ChunkRenderer::deterministic), a summarizer, a changed policy or counter, a new chunk that shares a call
//! id with an old one or renders into the system message, caps that name
//! chunks or tools (their warnings depend on the chunks), a last build
//! without history or without its elided-history marker.

use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::SmallVec;

use super::Build;
use super::clear::Clearing;
use super::ready::cap_on;
use super::trim::Trim;
use crate::budget::planner::role_index;
use crate::budget::{
    Calls, ChunkDecision, Decision, DropReason, MIN_CAP, NO_UNIT, Policy, PreviousCut, Timeline,
    framing_table, is_compaction, is_orphan_result, is_tool_use, protects_itself, tool_call,
};
use crate::error::Result;
use crate::model::chunk_id::{ChunkId, ChunkIds, fingerprint};
use crate::model::memory::{MemoryChunk, MemoryState};
use crate::model::roles::Role;
use crate::output::cache::CacheReport;
use crate::output::earlier::Before;
use crate::output::last_build::LastBuild;
use crate::output::message::{ChunkSpans, ContextMessage, MessageFingerprint};
use crate::output::message_text::MessageText;
use crate::output::result::BuildResult;
use crate::settings::Settings;
use crate::tokens::parts::{CountedText, SEPARATOR};

impl LastBuild {
    /// A session's last build, `result`, of `state` with `settings` and
    /// `policy`: its cut by position, and what extends it.
    pub(crate) fn of_session(
        result: BuildResult,
        state: &MemoryState,
        policy: &Policy,
        settings: &Settings,
    ) -> Self {
        let in_system: FxHashSet<&str> = result
            .system_message()
            .map(|m| m.chunk_ids.iter().map(|id| id.as_str()).collect())
            .unwrap_or_default();
        let mut calls = FxHashMap::default();
        let (mut planned, mut system_chunks) = (Vec::new(), Vec::new());
        let (mut first_dropped, mut squeezed) = (None, false);
        for (index, (chunk, row)) in state.chunks.iter().zip(result.decisions.iter()).enumerate() {
            if let Some(call) = tool_call(chunk) {
                note_call(&mut calls, call, index);
            }
            match row.decision {
                Decision::Dropped {
                    reason: DropReason::Budget,
                } if first_dropped.is_none() => first_dropped = Some(index),
                Decision::Truncated { cap, .. } => {
                    let renderers = &settings.renderers;
                    let renderer = renderers.renderer_for(chunk);
                    let set = cap_on(policy, chunk, renderer, renderers.renders_by_default(chunk));
                    squeezed |= set.map(|set| set.max(MIN_CAP)) != Some(cap);
                }
                _ => {}
            }
            if row.is_included() && in_system.contains(row.id.as_str()) {
                system_chunks.push(index);
            } else if row.is_included() {
                planned.push(index);
            }
        }
        if let Some(first) = first_dropped {
            // The unit's members are the chunks the budget dropped with it:
            // one the filters left out shares its call id, not its unit.
            let call = tool_call(&state.chunks[first]);
            let rows = &result.decisions;
            let in_unit = |index: &usize| match call {
                Some(call) => {
                    tool_call(&state.chunks[*index]) == Some(call)
                        && rows[*index].decision
                            == (Decision::Dropped {
                                reason: DropReason::Budget,
                            })
                }
                None => *index == first,
            };
            planned.extend((first..state.chunks.len()).filter(in_unit));
            planned.sort_unstable();
        }
        LastBuild {
            cut: PreviousCut::by_position(&result.decisions),
            extendable: true,
            whole: true,
            chunks: state.chunks.len(),
            timeline: Timeline::of(&state.chunks, |index| {
                !is_filtered(&result.decisions[index])
            }),
            calls,
            policy: policy.clone(),
            planned,
            system_chunks,
            changed_rows: None,
            squeezed,
            untrimmed: None,
            tally: None,
            result,
        }
    }
}

impl LastBuild {
    /// The shared id of the chunk at `index`: one the last build reported,
    /// or one of the `appended` since.
    pub(super) fn id_of<'a>(&'a self, appended: &'a [Appended<'_>], index: usize) -> &'a ChunkId {
        match index < self.chunks {
            true => &self.result.decisions[index].id,
            false => &appended[index - self.chunks].row.id,
        }
    }
}

/// Notes in `calls` (see `LastBuild::calls`) that the chunk at `index`,
/// the newest so far, has the call id `call`.
fn note_call(calls: &mut FxHashMap<u64, (usize, usize)>, call: &str, index: usize) {
    let entry = calls.entry(fingerprint(call)).or_insert((index, index));
    entry.1 = index;
}

/// Whether the build's filters left the chunk of `row` out.
fn is_filtered(row: &ChunkDecision) -> bool {
    row.decision
        == Decision::Dropped {
            reason: DropReason::Filtered,
        }
}

/// A chunk appended since the last build, rendered and judged.
pub(super) struct Appended<'s> {
    pub(super) index: usize,
    pub(super) chunk: &'s MemoryChunk,
    pub(super) row: ChunkDecision,
    /// Its role and rendering when it is in the prompt.
    pub(super) part: Option<(Role, Arc<CountedText>)>,
}

/// What a turn that extends the last build does to it.
struct Extension<'t> {
    appended: &'t [Appended<'t>],
    timeline: Timeline,
    growth: Growth<'t>,
    /// Old rows whose protection lifted.
    lifted: Vec<(usize, ChunkDecision)>,
    clearing: Option<Clearing>,
    /// The cuts that make it fit, when it overflows.
    trim: Option<Trim>,
}

/// The new items grouped into messages: the first group may extend the
/// last build's last message.
struct Growth<'a> {
    /// When the first group joins the last message: the content tokens of
    /// that message's parts, each followed by the separator.
    joined_before: Option<usize>,
    groups: Vec<(Role, SmallVec<[&'a Appended<'a>; 4]>)>,
    /// Tokens of the grown prompt.
    total: usize,
}

impl<'a> Build<'a> {
    /// This turn's build as the extension of the session's last build,
    /// `carry`, or planned again over its prompt; `carry` becomes it, its
    /// cut included. `None` when the full pipeline must build it (see the
    /// module docs). New chunks go through the build's cache.
    ///
    /// # Errors
    ///
    /// As the pipeline: a new chunk's cap too small, a tokenizer that fails
    /// to load.
    pub(crate) fn extend(mut self, carry: &mut LastBuild) -> Result<Option<BuildResult>> {
        let counter = self.preparer.counter;
        if !self.extends(carry) {
            return Ok(None);
        }
        if counter.encoding_name() != carry.result.encoding || !counter.additive_at_clean_cuts() {
            return Ok(None);
        }
        let Some(mut appended) = self.appended(carry)? else {
            return Ok(None);
        };
        let timeline = carry.timeline_with(&appended);
        protect(&mut appended, &timeline);
        let framing = framing_table(self.settings.framing, counter);
        let lifted = self.lifted(carry, &timeline);
        let mut clearing = match self.management() {
            Some(_) => match self.clearing(carry, &mut appended, &timeline)? {
                Some(clearing) => Some(clearing),
                None => return Ok(None),
            },
            None => None,
        };
        let growth = grow(&carry.result, &appended, &framing);
        if let Some(clearing) = &mut clearing {
            let grew = growth.total as isize - carry.result.token_count as isize;
            let closed = growth.joined_before.is_none() && !growth.groups.is_empty();
            if !self.measure(clearing, (carry, &appended), (grew, closed)) {
                return Ok(None);
            }
        }
        let total = clearing
            .as_ref()
            .map_or(growth.total as isize, |c| c.total(growth.total));
        let Some(lifted) = lifted else {
            return self.replan_turn(carry, (&appended, timeline), clearing);
        };
        let mut trim = None;
        if total > carry.result.budget as isize {
            let turn = (&appended[..], &timeline);
            trim = self.trim_turn(carry, turn, (&lifted, clearing.as_ref()), total);
            if trim.is_none() {
                return self.replan_turn(carry, (&appended, timeline), clearing);
            }
        }
        let extension = Extension {
            appended: &appended,
            timeline,
            growth,
            lifted,
            clearing,
            trim,
        };
        self.extended(carry, extension, &framing)
    }

    /// The trim of a turn whose grown prompt, of `total` tokens, overflows,
    /// when cuts made in place are the plan's (see `trim`).
    fn trim_turn(
        &mut self,
        carry: &LastBuild,
        turn: (&[Appended<'_>], &Timeline),
        (lifted, clearing): (&[(usize, ChunkDecision)], Option<&Clearing>),
        total: isize,
    ) -> Option<Trim> {
        let grown = usize::try_from(total).ok()?;
        let (appended, timeline) = turn;
        let turn = self.trim_turn_of(carry, appended, clearing);
        self.trim_in_place(turn, (timeline, lifted), grown)
    }

    /// `carry` extended by the turn: it becomes this turn's build, which
    /// is returned.
    ///
    /// # Errors
    ///
    /// As [`replan`](Build::replan), should a trim not write.
    fn extended(
        mut self,
        carry: &mut LastBuild,
        extension: Extension<'_>,
        framing: &[usize; 3],
    ) -> Result<Option<BuildResult>> {
        let Extension {
            appended,
            timeline,
            growth,
            lifted,
            clearing,
            trim,
        } = extension;
        // A trim's writes are planned from the ladder: should one not fit
        // the prompt, the turn is planned again from the last build.
        let fallback =
            (trim.is_some()).then(|| (carry.clone(), clearing.clone(), timeline.clone()));
        let old_total = carry.result.token_count as u64;
        // The messages the turn leaves as they were: all the last build's
        // but the one it grows.
        let grows_last = usize::from(growth.joined_before.is_some());
        let kept = carry.result.messages.len().saturating_sub(grows_last);
        let priming = self.settings.framing.priming();
        let writes = (trim.as_ref(), clearing.as_ref());
        let previous = previous_of(carry, writes, &lifted, (kept, priming));
        self.apply(carry, &growth, framing);
        for (index, row) in lifted {
            carry.result.decisions.set(index, row);
            carry.note_changed(index);
        }
        let cleared_from = clearing.and_then(|clearing| carry.clear(clearing));
        carry.record_rows(appended);
        carry.planned.extend(
            appended
                .iter()
                .filter(|a| a.part.is_some())
                .map(|a| a.index),
        );
        let mut trimmed_from = None;
        if let (Some(trim), Some((last, clearing, timeline))) = (trim, fallback) {
            let Some(first) = self.write_trim(carry, &trim, appended) else {
                debug_assert!(false, "a trim that does not write");
                *carry = last;
                return self.replan_turn(carry, (appended, timeline), clearing);
            };
            trimmed_from = Some(first);
            self.keep_window(carry, trim.into_kept(), &timeline);
        }
        let trimmed = trimmed_from.is_some();
        let first = [cleared_from, trimmed_from].into_iter().flatten().min();
        let first = first.map(|first| first.min(kept));
        match (&previous, first) {
            (Some(Previous::Whole(previous)), Some(first)) => {
                carry.report_cache(&**previous, first)
            }
            (Some(Previous::Kept(previous)), Some(first)) => carry.report_cache(&**previous, first),
            _ => {}
        }
        carry.grow_to(self.state, appended, timeline);
        // Every chunk this build did not render came from the last one.
        let stats = &mut self.cache.stats;
        stats.chunks_cached = carry.chunks - stats.chunks_rendered;
        stats.extended = !trimmed;
        stats.replanned = trimmed;
        stats.trimmed = trimmed;
        let due = (self.compaction_trigger()).map(|t| carry.untrimmed_after(old_total) > t);
        carry.result.compaction_due = due;
        Ok(Some(carry.result.clone()))
    }

    /// This turn's build planned again over `carry`'s prompt with the
    /// `appended` chunks and what the edit clears (see `replan`), with what
    /// its prompt shares with `carry`'s.
    fn replan_turn(
        self,
        carry: &mut LastBuild,
        turn: (&[Appended<'_>], Timeline),
        clearing: Option<Clearing>,
    ) -> Result<Option<BuildResult>> {
        let previous = carry.result.clone();
        carry.untrimmed = None;
        // The plan writes the prompt anew: the next trim reads it whole.
        carry.changed_rows = None;
        let trigger = self.compaction_trigger();
        let mut replanned = self.replan(carry, turn, clearing)?;
        if let Some(result) = &mut replanned {
            let stable = result.stable_prefix_tokens.unwrap_or_default();
            result.cache = Some(result.cache_over(&previous, stable));
            result.compaction_due = trigger.map(|t| result.untrimmed_tokens() > t);
            carry.result.cache.clone_from(&result.cache);
            carry.result.compaction_due = result.compaction_due;
        }
        Ok(replanned)
    }

    /// Whether this build's settings, state and policy are ones an
    /// extension of `carry` can build (the rest is checked as the chunks
    /// are read).
    fn extends(&self, carry: &LastBuild) -> bool {
        let (state, policy) = (self.state, self.preparer.policy);
        let last = &carry.result;
        carry.extendable
            && self.settings.renderers.all_deterministic()
            && !carry.squeezed
            && (self.management())
                .is_none_or(|m| carry.tally.as_ref().is_some_and(|t| t.follows(m)))
            && policy.plans_like(&carry.policy)
            && !policy.caps.names_chunks_or_tools()
            && state.chunks.len() >= carry.chunks
            && last.history().len() > 0
            && last.last_part.is_some()
            && last.elided.is_none_or(|elided| elided.marker)
    }

    /// The chunks appended since `carry`'s build, rendered (through
    /// the build's cache) and judged on their own: filtered out, orphaned, or in
    /// the prompt. `None` when one needs the full pipeline.
    fn appended(&mut self, carry: &LastBuild) -> Result<Option<Vec<Appended<'a>>>> {
        let (state, settings) = (self.state, self.settings);
        let new = &state.chunks[carry.chunks..];
        let only_ids = settings.only_ids();
        let mut calls = Calls::default();
        // A compaction folds old chunks and moves its summary back.
        if new.iter().any(is_compaction) {
            return Ok(None);
        }
        for chunk in new {
            let Some(call) = tool_call(chunk) else {
                continue;
            };
            // It could join an old unit or adopt an old orphan result.
            if carry.calls.contains_key(&fingerprint(call)) {
                return Ok(None);
            }
            if is_tool_use(chunk) && settings.selects(chunk, only_ids.as_ref()) {
                calls.insert(call, NO_UNIT);
            }
        }
        let mut appended = Vec::with_capacity(new.len());
        // Newest first, as the pipeline walks: a failing chunk is the one
        // it would name.
        for (offset, chunk) in new.iter().enumerate().rev() {
            let index = carry.chunks + offset;
            let id = self.cache.id(index, &chunk.id);
            let mut row = ChunkDecision::filtered(id, chunk, self.preparer.policy);
            let mut part = None;
            if settings.selects(chunk, only_ids.as_ref()) {
                // A build that failed may have let its text go.
                let prepared = self.prepared(index, chunk)?;
                let prepared = self.with_text(prepared, index, chunk)?;
                row.tokens = prepared.part.alone();
                row.decision = prepared.decision;
                if is_orphan_result(chunk, &calls) {
                    row.decision = Decision::Dropped {
                        reason: DropReason::Orphan,
                    };
                } else if prepared.role == Role::System || !prepared.part.clean_start {
                    return Ok(None);
                } else {
                    part = Some((prepared.role, prepared.part));
                }
            }
            appended.push(Appended {
                index,
                chunk,
                row,
                part,
            });
        }
        appended.reverse();
        Ok(Some(appended))
    }

    /// The rows of old chunks whose protection lifts now that the latest
    /// user message or the newest tool use moved on: the last build's
    /// latest user message, and the calls and results of its newest tool
    /// use, each keep only their unit's own protection (a pinned or
    /// critical member) unless they still anchor. `None` when such a unit
    /// reaches back before its newest-use call.
    fn lifted(
        &self,
        carry: &LastBuild,
        timeline: &Timeline,
    ) -> Option<Vec<(usize, ChunkDecision)>> {
        let state = self.state;
        let old = &carry.timeline;
        let rows = &carry.result.decisions;
        let chunks = &state.chunks[..carry.chunks];
        // Items are in the prompt (rows there were protected: kept whole
        // or capped) and outside the system message.
        let is_item = |index: usize| {
            let chunk = &chunks[index];
            !matches!(rows[index].decision, Decision::Dropped { .. })
                && self.settings.renderers.renderer_for(chunk).role(chunk) != Role::System
        };
        let keeps = |index: usize| {
            protects_itself(&chunks[index]) || timeline.anchors(index, &chunks[index])
        };
        let mut relooked: Vec<(usize, bool)> = Vec::new();
        if let Some(user) = old
            .latest_user()
            .filter(|&u| timeline.latest_user() != Some(u))
        {
            relooked.push((user, keeps(user)));
        }
        if !timeline.same_newest_use(old)
            && let Some(first) = old.newest_calls().next().map(|(call, _)| call)
        {
            let ids: SmallVec<[&str; 2]> = old.newest_calls().filter_map(|(_, id)| id).collect();
            let in_use = |index: usize| match tool_call(&chunks[index]) {
                Some(call) => ids.contains(&call),
                None => old.newest_calls().any(|(call, _)| call == index),
            };
            let members: Vec<usize> = (first..chunks.len())
                .filter(|&i| in_use(i) && is_item(i))
                .collect();
            let mut units: FxHashMap<&str, bool> = FxHashMap::default();
            for &index in &members {
                if let Some(call) = tool_call(&chunks[index]) {
                    if carry
                        .calls
                        .get(&fingerprint(call))
                        .is_none_or(|&(f, _)| f < first)
                    {
                        return None;
                    }
                    *units.entry(call).or_default() |= keeps(index);
                }
            }
            relooked.extend(members.into_iter().map(|index| {
                let unit = tool_call(&chunks[index]).and_then(|call| units.get(call));
                (index, unit.copied().unwrap_or_else(|| keeps(index)))
            }));
        }
        let changed = relooked
            .into_iter()
            .filter(|&(index, protected)| is_item(index) && protected != rows[index].protected);
        Some(
            changed
                .map(|(index, protected)| {
                    let row = ChunkDecision {
                        protected,
                        ..rows[index].clone()
                    };
                    (index, row)
                })
                .collect(),
        )
    }

    /// Grows `carry`'s messages, counts and fingerprints as `growth` says.
    fn apply(&self, carry: &mut LastBuild, growth: &Growth<'_>, framing: &[usize; 3]) {
        let result = &mut carry.result;
        let old_total = result.token_count;
        let priming = self.settings.framing.priming();
        let mut stable = old_total - priming;
        let mut groups = growth.groups.iter();
        // The first group is taken only with the message it joins.
        if let (Some(joined_before), Some(message), Some(print)) = (
            growth.joined_before,
            result.messages.last_mut(),
            result.fingerprints.last_mut(),
        ) && let Some((_, parts)) = groups.next()
        {
            stable = stable - message.tokens + print.growable;
            append_parts(message, parts);
            let (content, growable) = grown_counts(joined_before, parts);
            message.tokens = framing[role_index(message.role)] + content;
            *print = MessageFingerprint::of(message, growable);
        }
        for (role, parts) in groups {
            let mut message = ContextMessage {
                role: *role,
                content: MessageText::default(),
                chunk_ids: ChunkIds::default(),
                tokens: 0,
                spans: ChunkSpans::new(),
            };
            append_parts(&mut message, parts);
            let (content, growable) = grown_counts(0, parts);
            message.tokens = framing[role_index(*role)] + content;
            result
                .fingerprints
                .push(MessageFingerprint::of(&message, growable));
            result.messages.push(message);
        }
        if let Some((_, part)) = growth
            .groups
            .last()
            .and_then(|(_, p)| p.last()?.part.as_ref())
        {
            result.last_part = Some(part.released());
        }
        result.token_count = growth.total;
        result.stable_prefix_tokens = Some(stable);
        // Only appended to: the previous prompt is all still there.
        result.cache = Some(CacheReport {
            stable_prefix_tokens: stable,
            broke_at: None,
        });
        result.trim_target = None;
    }
}

/// The last build as this turn's cache report reads it (see
/// `output::earlier`), when the turn writes over its messages.
enum Previous {
    /// Whole: a trim writes anywhere in the prompt.
    Whole(Box<BuildResult>),
    /// From the first message an edit's stubs write again, the turn's
    /// messages all after it.
    Kept(Box<Before>),
}

/// What this turn's cache report needs of `carry`, taken before the turn
/// writes over it: all of it when a `trim` writes, else the messages from
/// the first that the `clearing`'s stubs write again (the turn writes none
/// before; it grows the prompt from message `kept` on) and the old rows
/// of the chunks the turn changes, the `lifted` ones and the edit's. The
/// prompt's tokens are its messages' and the reply's `priming`. `None`
/// when the turn writes over no message.
fn previous_of(
    carry: &LastBuild,
    (trim, clearing): (Option<&Trim>, Option<&Clearing>),
    lifted: &[(usize, ChunkDecision)],
    (kept, priming): (usize, usize),
) -> Option<Previous> {
    if trim.is_some() {
        return Some(Previous::Whole(Box::new(carry.result.clone())));
    }
    let clearing = clearing?;
    let from = clearing.first_rewritten()?.min(kept);
    let lifted = lifted.iter().map(|(index, _)| *index);
    let changed: Vec<usize> = lifted.chain(clearing.chunks()).collect();
    let message_tokens = carry.result.token_count.saturating_sub(priming);
    let kept = Before::keep(&carry.result, (from, message_tokens), &changed);
    Some(Previous::Kept(Box::new(kept)))
}

/// Spreads protection and priority over the new items, as the pipeline
/// does: a pinned or critical chunk, the latest user message, the newest
/// tool use, and every member of a unit with a protected member are
/// protected; a unit plans with its highest priority.
fn protect(appended: &mut [Appended<'_>], timeline: &Timeline) {
    let mut units: FxHashMap<&str, (bool, i64)> = FxHashMap::default();
    for a in appended.iter_mut().filter(|a| a.part.is_some()) {
        a.row.protected = protects_itself(a.chunk) || timeline.anchors(a.index, a.chunk);
        if let Some(call) = tool_call(a.chunk) {
            let unit = units.entry(call).or_insert((false, i64::MIN));
            unit.0 |= a.row.protected;
            unit.1 = unit.1.max(a.row.priority);
        }
    }
    for a in appended.iter_mut().filter(|a| a.part.is_some()) {
        if let Some(&(protected, priority)) = tool_call(a.chunk).and_then(|call| units.get(call)) {
            a.row.protected = protected;
            a.row.priority = priority;
        }
    }
}

/// The new items grouped by role after the last build's messages, and the
/// grown prompt's tokens: every part starts cleanly, so a message's content
/// costs each part but the last followed by the separator, plus the last
/// alone.
fn grow<'a>(last: &BuildResult, appended: &'a [Appended<'a>], framing: &[usize; 3]) -> Growth<'a> {
    let mut groups: Vec<(Role, SmallVec<[&Appended<'_>; 4]>)> = Vec::new();
    for a in appended {
        let Some((role, _)) = &a.part else { continue };
        match groups.last_mut() {
            Some((open, parts)) if open == role => parts.push(a),
            _ => groups.push((*role, SmallVec::from_elem(a, 1))),
        }
    }
    let mut total = last.token_count;
    let mut joined_before = None;
    let mut rest = &groups[..];
    if let (Some((role, parts)), Some(message), Some(part)) = (
        groups.first(),
        last.messages.last(),
        last.last_part.as_ref(),
    ) && *role == message.role
    {
        let before = message.tokens - framing[role_index(*role)];
        let joined = before - part.alone() + part.joined();
        let (grown, _) = grown_counts(joined, parts);
        total += grown - before;
        joined_before = Some(joined);
        rest = &groups[1..];
    }
    for (role, parts) in rest {
        total += framing[role_index(*role)] + grown_counts(0, parts).0;
    }
    Growth {
        joined_before,
        groups,
        total,
    }
}

/// Content tokens of a message whose earlier parts cost `joined_before`
/// (each followed by the separator) once `parts` follow them, and the
/// tokens that stay put if it grows again (see `MessageFingerprint`).
fn grown_counts(joined_before: usize, parts: &[&Appended<'_>]) -> (usize, usize) {
    let parts: SmallVec<[&CountedText; 4]> = parts
        .iter()
        .filter_map(|a| a.part.as_ref().map(|(_, part)| &**part))
        .collect();
    let Some((last, rest)) = parts.split_last() else {
        return (joined_before, joined_before);
    };
    let joined: usize = joined_before + rest.iter().map(|p| p.joined()).sum::<usize>();
    (joined + last.alone(), joined + last.head())
}

/// Appends new items to `message`: their text, each after the separator
/// (the first too, unless the message is new), and their ids.
fn append_parts(message: &mut ContextMessage, parts: &[&Appended<'_>]) {
    let texts = parts
        .iter()
        .filter_map(|a| a.part.as_ref().map(|(_, p)| &p.text));
    let len = texts
        .clone()
        .map(|t| t.len() + SEPARATOR.len())
        .sum::<usize>();
    let mut content = String::with_capacity(message.content.len() + len);
    content.push_str(&message.content);
    for text in texts {
        // A rendered chunk is never empty: only a new message is.
        if !content.is_empty() {
            content.push_str(SEPARATOR);
        }
        message
            .spans
            .push(content.len()..content.len() + text.len());
        content.push_str(text);
    }
    message.content = content.into();
    let ids = parts
        .iter()
        .filter(|a| a.part.is_some())
        .map(|a| a.row.id.clone());
    message.chunk_ids.extend(ids);
}

impl LastBuild {
    /// What this build, extended from one of `old_total` tokens, costs
    /// untrimmed: the untrimmed cost of that one (with the bodies an edit
    /// stubbed this turn) plus what was appended (counted from the
    /// decisions the first time a turn asks).
    fn untrimmed_after(&mut self, old_total: u64) -> u64 {
        let untrimmed = match self.untrimmed {
            Some(before) => (before + self.result.token_count as u64).saturating_sub(old_total),
            None => self.result.untrimmed_tokens(),
        };
        self.untrimmed = Some(untrimmed);
        untrimmed
    }

    /// Adds the new chunks' decisions to the report.
    fn record_rows(&mut self, appended: &[Appended<'_>]) {
        for a in appended {
            self.result.decisions.push(a.row.clone());
        }
    }

    /// The timeline with the `appended` chunks taken in.
    pub(super) fn timeline_with(&self, appended: &[Appended<'_>]) -> Timeline {
        let mut timeline = self.timeline.clone();
        for a in appended.iter().filter(|a| !is_filtered(&a.row)) {
            timeline.push(a.index, a.chunk);
        }
        timeline
    }

    /// Takes in the new chunks' call ids and `timeline`: the carried
    /// build now covers `state`.
    pub(super) fn grow_to(
        &mut self,
        state: &MemoryState,
        appended: &[Appended<'_>],
        timeline: Timeline,
    ) {
        for a in appended {
            if let Some(call) = tool_call(a.chunk) {
                note_call(&mut self.calls, call, a.index);
            }
        }
        self.chunks = state.chunks.len();
        self.timeline = timeline;
    }
}
