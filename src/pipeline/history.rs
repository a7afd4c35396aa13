//! The chunks of a session rendered and counted for the planner, through a
//! build's cache.

use std::ops::RangeInclusive;

use std::sync::Arc;

use super::Build;
use super::ahead::{Ahead, Helpers, Jobs, Ready};
use super::build_cache::BuildCache;
use super::forecast::CutForecast;
use super::frozen::Frozen;
use super::ready::{PreparedChunk, Preparer};
use crate::budget::{
    Calls, ChunkDecision, Decision, DropReason, Fate, Fold, Item, NO_UNIT, PreviousCut, Timeline,
    call_id_of, is_compaction, is_orphan_result, is_tool_result, protects_itself, tool_call,
};
use crate::error::{ChunkLocation, ErrorKind, Result};
use crate::model::memory::MemoryChunk;
use crate::model::roles::{Retention, Role};
use crate::output::result::CompactionInEffect;
use crate::render::ChunkRenderer;
use crate::settings::Settings;
use crate::tokens::parts::CountedText;

/// The chunks of a build after rendering, before planning.
#[derive(Default)]
pub(super) struct History<'s> {
    pub(super) items: Vec<Item>,
    /// The call ids of the tool calls, for grouping units.
    pub(super) calls: Calls<'s>,
    /// Chunks dropped again without planning, and their tokens.
    pub(super) frozen: (usize, usize),
    /// One per session chunk, in order.
    pub(super) decisions: Vec<ChunkDecision>,
    /// Rendered chunks whose role is `system`, and their session indexes.
    pub(super) system_parts: Vec<Arc<CountedText>>,
    pub(super) system_chunks: Vec<usize>,
    /// The newest tool use's results that a cap may cut, and the
    /// compaction's summary: a build that does not fit cuts them further
    /// (see `squeeze`).
    pub(super) newest_results: Vec<usize>,
    /// The steps, latest user message and newest tool use.
    pub(super) timeline: Timeline,
    /// The chunks the compaction in effect folds, and (when the chunk
    /// does not say) their tokens.
    folded: (u64, u64),
}

/// Which chunks a build selects, with their tool calls and steps.
struct Selection<'s> {
    selected: Vec<bool>,
    /// The compaction in effect, which unselects what it folds.
    fold: Option<Fold>,
    /// The call ids of the selected tool calls.
    calls: Calls<'s>,
    /// The selected chunks' steps, latest user message and newest tool use.
    timeline: Timeline,
}

/// What the newest-first walk over the chunks carries from one to the next.
struct Walk<'w, 's> {
    selection: &'w Selection<'s>,
    forecast: CutForecast<'w>,
    /// The first chunk the forecast looks at: a session renders only its
    /// newest chunks, and older ones need no forecast.
    forecast_from: usize,
    history: History<'s>,
    /// The first tool call or result a renderer put in the system role.
    misplaced: Option<ErrorKind>,
    /// The chunks rendered ahead of the walk, on other threads too.
    ahead: Ahead,
}

impl<'a> Build<'a> {
    /// Renders, caps and counts every selected chunk; system-role chunks go
    /// to the system message, the rest become planner items with their
    /// protection, priority and (for disposable ones) stub.
    pub(super) fn prepare_history(
        &mut self,
        previous: Option<&'a PreviousCut>,
    ) -> Result<History<'a>> {
        let state = self.state;
        let selection = self.select();
        let chunks = state.chunks.len();
        // Newest first, so that a chunk the plan will surely cut can let its
        // text go as soon as it is counted (it is rendered again in the rare
        // case it is kept after all): a cold build of a long session never
        // holds all of it rendered at once.
        let forecast = CutForecast::new(
            &state.chunks,
            (&selection.selected, &selection.timeline),
            self.preparer.policy,
            self.budget.available,
            previous,
        );
        let frozen = self.frozen(&selection, previous);
        let mut walk = Walk {
            selection: &selection,
            forecast,
            forecast_from: self.cache.oldest_missing(),
            history: History {
                items: Vec::with_capacity(chunks),
                decisions: Vec::with_capacity(chunks),
                ..History::default()
            },
            misplaced: None,
            ahead: Ahead::new(),
        };
        self.walk_newest_first(&frozen, &mut walk)?;
        let Walk {
            mut history,
            misplaced,
            ..
        } = walk;
        if let Some(error) = misplaced {
            return Err(error.into());
        }
        history.calls = selection.calls;
        history.timeline = selection.timeline;
        history.items.reverse();
        history.decisions.reverse();
        history.system_parts.reverse();
        history.system_chunks.reverse();
        if let Some(fold) = selection.fold {
            self.compaction = Some(in_effect(&state.chunks, fold, history.folded));
            place_summary(&mut history.items, fold);
        }
        Ok(history)
    }

    /// Walks the chunks newest first, each batch of those to render made
    /// ready ahead on the settings' threads.
    fn walk_newest_first(&mut self, frozen: &Frozen, walk: &mut Walk<'_, 'a>) -> Result<()> {
        let state = self.state;
        let preparer = self.preparer;
        let jobs = Jobs {
            settings: self.settings,
            state,
            selected: &walk.selection.selected,
            timeline: &walk.selection.timeline,
            frozen,
            preparer: &preparer,
            calls: &walk.selection.calls,
            cached_below: walk.forecast_from,
        };
        std::thread::scope(|scope| {
            let mut helpers = Helpers::new(scope, &jobs);
            for (index, chunk) in state.chunks.iter().enumerate().rev() {
                if walk.ahead.needs_batch(index) {
                    helpers.render_ahead(index, self.cache, &mut walk.ahead);
                }
                self.walk_chunk(index, chunk, frozen, walk)?;
            }
            Ok(())
        })
    }

    /// The chunks the settings' filters select, their tool calls and turns.
    fn select(&self) -> Selection<'a> {
        let (settings, state) = (self.settings, self.state);
        let only_ids = settings.only_ids();
        let fold = Fold::of(&state.chunks);
        let folded = |i: usize, c: &MemoryChunk| fold.is_some_and(|f| f.folds(i, c));
        let selected: Vec<bool> = (state.chunks.iter().enumerate())
            .map(|(i, c)| settings.selects(c, only_ids.as_ref()) && !folded(i, c))
            .collect();
        let mut calls = Calls::with_capacity_and_hasher(state.chunks.len() / 2, Default::default());
        calls.extend(
            state
                .chunks
                .iter()
                .zip(&selected)
                .filter(|(_, keep)| **keep)
                .filter_map(|(c, _)| Some((call_id_of(c)?, NO_UNIT))),
        );
        let timeline = Timeline::of(&state.chunks, |index| selected[index]);
        Selection {
            selected,
            fold,
            calls,
            timeline,
        }
    }

    /// The chunks a session drops again without rendering or planning
    /// them (see [`Frozen`]); none without a previous build, or with
    /// nothing of it in the cache.
    fn frozen(&self, selection: &Selection<'_>, previous: Option<&PreviousCut>) -> Frozen {
        let (state, policy) = (self.state, self.preparer.policy);
        match previous {
            // Edits measure the prompt with every chunk: none is frozen.
            // A renderer that may write a chunk differently now: its
            // chunks might not be dropped again as they were.
            Some(previous)
                if self.settings.renderers.all_deterministic()
                    && policy.summarizer().is_none()
                    && self.management().is_none() =>
            {
                let cached = |index: usize| {
                    let chunk = &state.chunks[index];
                    let (_, cap) = self.renderer_and_cap(chunk);
                    let (tokens, role) = self.cache.peek(index, cap)?;
                    let kept = role != Role::System && !is_orphan_result(chunk, &selection.calls);
                    kept.then_some(tokens)
                };
                let selected = (&selection.selected[..], &selection.timeline);
                Frozen::find(state, selected, policy, previous, cached)
            }
            _ => Frozen::none(),
        }
    }

    /// One step of the newest-first walk: the decision on `chunk`, frozen
    /// (dropped as before), filtered out, or admitted to the history.
    fn walk_chunk(
        &mut self,
        index: usize,
        chunk: &MemoryChunk,
        frozen: &Frozen,
        walk: &mut Walk<'_, 'a>,
    ) -> Result<()> {
        let cache = &mut *self.cache;
        let id = cache.id(index, &chunk.id);
        let mut decision = ChunkDecision::filtered(id, chunk, self.preparer.policy);
        if let Some((priority, tokens)) = frozen.get(index) {
            cache.count_cached();
            decision.truncated_from = cache.truncated_from(index);
            decision.tokens = tokens;
            decision.priority = priority;
            decision.decision = Decision::Dropped {
                reason: DropReason::Budget,
            };
            walk.history.frozen.0 += 1;
            walk.history.frozen.1 += tokens;
        } else if walk.selection.selected[index] {
            self.admit(index, chunk, &mut decision, walk)?;
        } else if let Some(fold) = walk.selection.fold.filter(|f| f.folds(index, chunk)) {
            decision.decision = Decision::Dropped {
                reason: DropReason::Compacted,
            };
            let figures = &mut walk.history.folded;
            figures.0 += 1;
            if self.state.chunks[fold.compaction].folded().is_none() {
                figures.1 += self.prepared(index, chunk)?.part.alone() as u64;
            }
        }
        walk.history.decisions.push(decision);
        Ok(())
    }

    /// Renders and counts a selected `chunk`, then drops it as an orphan,
    /// puts it in the system message, or makes it a planner item (letting
    /// its body go at once when the forecast says the plan will cut it).
    fn admit(
        &mut self,
        index: usize,
        chunk: &MemoryChunk,
        decision: &mut ChunkDecision,
        walk: &mut Walk<'_, 'a>,
    ) -> Result<()> {
        let selection = walk.selection;
        let (ready, ready_stub) = match walk.ahead.take(index) {
            Some(Ready { prepared, stub }) => (Some(prepared), stub),
            None => (None, None),
        };
        let prepared = self.prepared_or(index, chunk, ready)?;
        decision.tokens = prepared.part.alone();
        decision.decision = prepared.decision;
        let retention =
            (self.preparer.policy).retention_of(chunk, selection.timeline.steps_after(index));
        if is_orphan_result(chunk, &selection.calls) {
            decision.decision = Decision::Dropped {
                reason: DropReason::Orphan,
            };
        } else if prepared.role == Role::System {
            // The system message is never trimmed, so a tool call or
            // result there would escape its unit and could outlive its
            // other half.
            if tool_call(chunk).is_some() {
                // Walking newest first: the last one found is the first in
                // the session, the one to name.
                walk.misplaced = Some(misplaced_call(index, chunk));
            }
            decision.protected = true;
            // The system message shows it: a store may have kept only counts.
            let shown = self.with_text(prepared, index, chunk)?;
            walk.history.system_parts.push(shown.part);
            walk.history.system_chunks.push(index);
        } else {
            let stub = match (retention, ready_stub) {
                (Retention::Disposable, Some(ready)) => self.cache.stub(index, || ready),
                (Retention::Disposable, None) => self.stub(index, chunk, &prepared.part),
                _ => None,
            };
            let cut = index >= walk.forecast_from
                && walk.forecast.body_surely_cut(
                    (index, chunk, &decision.id),
                    prepared.part.alone(),
                    stub.as_ref().map(|s| s.alone()),
                );
            let mut item = Item {
                chunk: index,
                role: prepared.role,
                part: prepared.part,
                stub,
                protected: protects_itself(chunk) || selection.timeline.anchors(index, chunk),
                priority: decision.priority,
            };
            if cut {
                release(&mut item, Some(Fate::Stubbed), self.cache);
            }
            let newest_result = is_tool_result(chunk)
                && !protects_itself(chunk)
                && selection.timeline.anchors(index, chunk);
            if newest_result || is_compaction(chunk) {
                walk.history.newest_results.push(index);
            }
            walk.history.items.push(item);
        }
        Ok(())
    }

    /// `chunk` rendered, capped and counted, from the cache when it has it.
    ///
    /// # Errors
    ///
    /// As [`Preparer::prepare`].
    pub(super) fn prepared(&mut self, index: usize, chunk: &MemoryChunk) -> Result<PreparedChunk> {
        self.prepared_or(index, chunk, None)
    }

    /// As [`prepared`](Build::prepared), taking the rendering from `ready`
    /// when the cache does not have it and it was made ahead.
    fn prepared_or(
        &mut self,
        index: usize,
        chunk: &MemoryChunk,
        ready: Option<Result<PreparedChunk>>,
    ) -> Result<PreparedChunk> {
        let (renderer, cap) = self.renderer_and_cap(chunk);
        let preparer = &self.preparer;
        self.cache.prepared(index, cap, || {
            ready.unwrap_or_else(|| preparer.prepare(index, chunk, renderer, cap))
        })
    }

    /// The renderer of `chunk` and the cap it renders under.
    pub(super) fn renderer_and_cap(
        &self,
        chunk: &MemoryChunk,
    ) -> (&'a dyn ChunkRenderer, Option<usize>) {
        renderer_and_cap(self.settings, &self.preparer, chunk)
    }

    /// `prepared` (the chunk at `index`, from the cache) with its text,
    /// rendered again if the cache let it go or holds only counts a store
    /// kept: for a chunk the prompt surely shows.
    ///
    /// # Errors
    ///
    /// As [`Preparer::prepare`].
    pub(super) fn with_text(
        &mut self,
        prepared: PreparedChunk,
        index: usize,
        chunk: &MemoryChunk,
    ) -> Result<PreparedChunk> {
        if prepared.part.is_released() {
            return self.restored(index, chunk);
        }
        Ok(prepared)
    }

    /// The stub of `chunk` (rendered as `part`), from the cache when it has it.
    pub(super) fn stub(
        &mut self,
        index: usize,
        chunk: &MemoryChunk,
        part: &CountedText,
    ) -> Option<Arc<CountedText>> {
        let renderer = self.settings.renderers.renderer_for(chunk);
        let preparer = &self.preparer;
        self.cache
            .stub(index, || preparer.stub(chunk, renderer, part))
    }

    /// Gives the items the texts the prompt may show, given each one's fate
    /// (`None` while the plan may keep it or stub it), rendering again what
    /// was let go (the counts do not change), and lets go of the rest.
    ///
    /// # Errors
    ///
    /// As [`Preparer::prepare`] (which succeeded on these chunks before).
    pub(super) fn settle_texts(
        &mut self,
        items: &mut [Item],
        fate: impl Fn(usize) -> Option<Fate>,
    ) -> Result<()> {
        let state = self.state;
        for (i, item) in items.iter_mut().enumerate() {
            let fate = fate(i);
            let chunk = &state.chunks[item.chunk];
            if shows_body(fate) && item.part.is_released() {
                let restored = self.restored(item.chunk, chunk)?.part;
                debug_assert_eq!(restored.alone(), item.part.alone(), "renders the same");
                item.part = restored;
            }
            if shows_stub(fate) && item.stub.as_ref().is_some_and(|s| s.is_released()) {
                self.cache.forget_stub(item.chunk);
                item.stub = self.stub(item.chunk, chunk, &item.part);
            }
            release(item, fate, self.cache);
        }
        Ok(())
    }

    /// `chunk` rendered again because a build shows it after its text was
    /// let go (the counts do not change).
    ///
    /// # Errors
    ///
    /// As [`Preparer::prepare`] (which succeeded on this chunk before).
    pub(super) fn restored(&mut self, index: usize, chunk: &MemoryChunk) -> Result<PreparedChunk> {
        self.cache.stats.chunks_restored += 1;
        let renderer = self.settings.renderers.renderer_for(chunk);
        let preparer = &self.preparer;
        let render = || preparer.render_text(chunk, renderer);
        // Not counted again, even in debug builds: a chat built again in a
        // fresh process counts none of its stored chunks, and loads no
        // tables (the session's property tests hold every restored chunk
        // to the cold build's counts).
        if let Some(restored) = self.cache.restore_whole(index, render) {
            return Ok(restored);
        }
        self.cache.forget_rendering(index);
        self.prepared(index, chunk)
    }
}

/// The renderer `settings` give `chunk`, and the cap it renders under with
/// `preparer`'s policy.
/// The compaction `fold` puts in effect, with what it folds: the chunk's
/// own figures when its plan counted them, else `counted`.
fn in_effect(chunks: &[MemoryChunk], fold: Fold, counted: (u64, u64)) -> CompactionInEffect {
    let chunk = &chunks[fold.compaction];
    let (chunks, tokens) = chunk.folded().map_or(counted, |f| (f.chunks, f.tokens));
    CompactionInEffect {
        id: chunk.id.clone(),
        covers: chunk.covers().unwrap_or_default().to_owned(),
        chunks,
        tokens,
    }
}

/// Moves the compaction's summary (if selected) to where its span was:
/// after the items the span keeps, before the first one after it.
pub(super) fn place_summary(items: &mut [Item], fold: Fold) {
    if let Some(moved) = summary_move(items, fold) {
        items[moved].rotate_right(1);
    }
}

/// The items the summary item moves over to stand where `fold`'s span
/// was (after the chunk it covers): rotating them right by one puts it
/// there. `None` when it stands there already.
pub(super) fn summary_move(items: &[Item], fold: Fold) -> Option<RangeInclusive<usize>> {
    let from = items.iter().position(|i| i.chunk == fold.compaction)?;
    let to = items.iter().position(|i| i.chunk > fold.covers)?;
    (to < from).then_some(to..=from)
}

pub(super) fn renderer_and_cap<'a>(
    settings: &'a Settings,
    preparer: &Preparer<'_>,
    chunk: &MemoryChunk,
) -> (&'a dyn ChunkRenderer, Option<usize>) {
    let renderer = settings.renderers.renderer_for(chunk);
    let by_default = settings.renderers.renders_by_default(chunk);
    (renderer, preparer.cap_for(chunk, renderer, by_default))
}

/// The error for a tool call or result (chunk `index`) that a custom
/// renderer put in the system role.
fn misplaced_call(index: usize, chunk: &MemoryChunk) -> ErrorKind {
    ErrorKind::Chunk {
        location: ChunkLocation {
            index,
            id: Some(chunk.id.clone()),
        },
        field: "call_id".into(),
        message: "a custom renderer put this tool call or result in the system role; tool \
                  calls and results must render into the user or assistant role"
            .into(),
    }
}

/// Whether the prompt may show an item's body, given its fate (`None`
/// while the plan may still keep it or stub it).
fn shows_body(fate: Option<Fate>) -> bool {
    matches!(fate, None | Some(Fate::Kept))
}

/// Whether the prompt may show an item's stub, given its fate.
fn shows_stub(fate: Option<Fate>) -> bool {
    matches!(fate, None | Some(Fate::Stubbed))
}

/// Lets go of the texts of `item` that the prompt will not show, given its
/// fate, keeping their counts, in the item and in `cache` alike. A stub is
/// let go only with its chunk dropped: a kept body is stubbed by some later
/// build.
pub(super) fn release(item: &mut Item, fate: Option<Fate>, cache: &mut BuildCache) {
    if !shows_body(fate) && !item.part.is_released() {
        item.part = Arc::new(item.part.released());
    }
    if let (Some(Fate::Dropped), Some(stub)) = (fate, item.stub.as_mut())
        && !stub.is_released()
    {
        *stub = Arc::new(stub.released());
    }
    cache.hold_released(item.chunk, &item.part, item.stub.as_ref());
}
