//! A session's turn whose last cut, with the new chunks, no longer fits:
//! the plan runs again, over the chunks it can change only.
//!
//! Given the last build as previous, the pipeline repeats its cut first:
//! every unit it dropped is dropped again, so those chunks only add their
//! count and tokens to the elided-history marker (most it does not even
//! plan). The plan here covers the chunks in the last prompt (outside the
//! system message), the oldest dropped unit (the marker stands there) and
//! the new chunks, with the same planner, ladder and previous cut, and takes
//! the other dropped chunks as that sum. The other rows are carried over;
//! the rows of the planned chunks that change are replaced, and the lists
//! of chunks left out and truncated updated in place. The cost is the
//! prompt's, not the session's. When the planner finds the protected
//! content too large, the full pipeline runs and reports it.

use std::sync::Arc;

use rustc_hash::FxHashSet;

use super::assemble::{Assembly, assemble, record_fate};
use super::clear::Clearing;
use super::extend::Appended;
use super::history::summary_move;
use super::{Build, Ladder};
use crate::budget::{
    Calls, ChunkDecision, Decision, Fate, Fold, Item, Layout, NO_UNIT, Planner, Step, StubReason,
    Timeline, all_start_clean, call_id_of, group_units, plan_steps, protects_itself,
};
use crate::error::Result;
use crate::model::roles::Retention;
use crate::model::rows::Rows;
use crate::output::last_build::LastBuild;
use crate::output::message::fingerprints;
use crate::output::result::BuildResult;
use crate::tokens::parts::CountedText;

/// The chunks a plan can change, as planner items, each with its decision
/// as prepared (kept whole or truncated by its cap).
struct Window {
    items: Vec<Item>,
    prepared: Vec<ChunkDecision>,
    /// Per item, whether the `clear_tool_uses` edit stubs it.
    edited: Vec<bool>,
}

impl<'a> Build<'a> {
    /// This turn's build by planning the chunks of `carry`'s prompt again
    /// with the new ones (`appended`, judged and protected); it becomes
    /// `carry`'s, its cut included. `None` when the full
    /// pipeline must build it.
    ///
    /// # Errors
    ///
    /// As the pipeline, for a chunk rendered again.
    pub(super) fn replan(
        mut self,
        carry: &mut LastBuild,
        (appended, timeline): (&[Appended<'_>], Timeline),
        clearing: Option<Clearing>,
    ) -> Result<Option<BuildResult>> {
        let clears: FxHashSet<usize> = clearing.iter().flat_map(Clearing::chunks).collect();
        let mut window = self.window(carry, (appended, &timeline), &clears)?;
        if !all_start_clean(&window.items) {
            return Ok(None);
        }
        let chunks = &self.state.chunks;
        let mut calls: Calls = window
            .items
            .iter()
            .map(|item| &chunks[item.chunk])
            .filter_map(|chunk| Some((call_id_of(chunk)?, NO_UNIT)))
            .collect();
        let units = group_units(&mut window.items, chunks, &mut calls);
        let id_of = |chunk: usize| carry.id_of(appended, chunk);
        // The edit's stubs come first, as the pipeline's edit stage puts them.
        let edits: Vec<Step> = (window.edited.iter().enumerate())
            .filter(|&(i, &edited)| edited && window.items[i].stub.is_some())
            .map(|(i, _)| Step::Stub(i))
            .collect();
        let (steps, sticky) = plan_steps(&window.items, &units, (id_of, Some(&carry.cut)), &edits);
        let ladder = Ladder {
            units,
            steps,
            sticky,
        };
        let system = self.system_of(carry)?;
        let frozen = frozen_counts(carry, &window);
        let base = self.planner(&system, &ladder, frozen);
        let planner = Planner {
            items: &window.items,
            ..base.clone()
        };
        let Ok(layout) = planner.plan() else {
            return Ok(None);
        };
        let fate = |i: usize| Some(layout.fates[i]);
        self.settle_texts(&mut window.items, fate)?;
        let planner = Planner {
            items: &window.items,
            ..base
        };
        let assembly = assemble(&planner, &layout, &carry.system_chunks, |chunk| {
            carry.id_of(appended, chunk).clone()
        });
        drop(planner);
        record_plan(carry, (&window, &layout), appended);
        report_plan(carry, assembly, &layout);
        carry.planned = still_planned(&window.items, &ladder, &layout);
        carry.grow_to(self.state, appended, timeline);
        // Every chunk this build did not render came from the last one.
        let stats = &mut self.cache.stats;
        stats.chunks_cached = carry.chunks - stats.chunks_rendered;
        stats.replanned = true;
        if let Some(clearing) = clearing {
            carry.report_edit(clearing);
        }
        Ok(Some(carry.result.clone()))
    }

    /// The planner items of `carry`'s planned chunks and the new chunks in
    /// the prompt, from the build's cache, with protection and (for disposable
    /// chunks and those the edit stubs: the chunks it stubbed before and
    /// `clears`) stubs as the pipeline gives them.
    fn window(
        &mut self,
        carry: &LastBuild,
        (appended, timeline): (&[Appended<'_>], &Timeline),
        clears: &FxHashSet<usize>,
    ) -> Result<Window> {
        let (state, policy) = (self.state, self.preparer.policy);
        let new = appended
            .iter()
            .filter(|a| a.part.is_some())
            .map(|a| a.index);
        let planned = carry.planned.iter().copied().chain(new);
        let mut window = Window {
            items: Vec::with_capacity(carry.planned.len() + appended.len()),
            prepared: Vec::with_capacity(carry.planned.len() + appended.len()),
            edited: Vec::with_capacity(carry.planned.len() + appended.len()),
        };
        let mut ages = timeline.ages();
        for index in planned {
            let chunk = &state.chunks[index];
            let prepared = self.prepared(index, chunk)?;
            let retention = policy.retention_of(chunk, ages.of(index));
            let mut stub = match retention {
                Retention::Disposable => self.stub(index, chunk, &prepared.part),
                _ => None,
            };
            let edited = clears.contains(&index) || was_edited(carry, index);
            if edited && stub.is_none() {
                let renderer = self.settings.renderers.renderer_for(chunk);
                stub = self.preparer.stub_always(chunk, renderer, &prepared.part);
            }
            window.edited.push(edited);
            let id = carry.id_of(appended, index).clone();
            let mut row = ChunkDecision::filtered(id, chunk, policy);
            row.tokens = prepared.part.alone();
            row.decision = prepared.decision;
            window.prepared.push(row);
            window.items.push(Item {
                chunk: index,
                role: prepared.role,
                part: prepared.part,
                stub,
                protected: protects_itself(chunk) || timeline.anchors(index, chunk),
                priority: policy.priority_of(chunk),
            });
        }
        // The compaction's summary stands where its span was, as a full
        // build places it (appended after it, it sits later by index).
        // Only a build that had one in effect looks: a turn that appends a
        // compaction takes the full pipeline.
        let fold = (carry.result.compaction.is_some())
            .then(|| Fold::of(&state.chunks))
            .flatten()
            .filter(|f| carry.planned.binary_search(&f.compaction).is_ok());
        if let Some(moved) = fold.and_then(|fold| summary_move(&window.items, fold)) {
            window.items[moved.clone()].rotate_right(1);
            window.prepared[moved.clone()].rotate_right(1);
            window.edited[moved].rotate_right(1);
        }
        Ok(window)
    }

    /// The system message's parts: the system prompt and fragments, then
    /// the system-role chunks from the build's cache.
    fn system_of(&mut self, carry: &LastBuild) -> Result<Vec<Arc<CountedText>>> {
        let state = self.state;
        let mut system = self.system_parts()?;
        for &index in &carry.system_chunks {
            let chunk = &state.chunks[index];
            let prepared = self.prepared(index, chunk)?;
            let prepared = self.with_text(prepared, index, chunk)?;
            system.push(prepared.part);
        }
        Ok(system)
    }
}

/// Records each planned chunk's fate in `carry`'s rows and cut; then
/// the new chunks' rows.
fn record_plan(
    carry: &mut LastBuild,
    (window, layout): (&Window, &Layout),
    appended: &[Appended<'_>],
) {
    let mut new_rows: Vec<ChunkDecision> = appended.iter().map(|a| a.row.clone()).collect();
    for (i, item) in window.items.iter().enumerate() {
        let mut row = window.prepared[i].clone();
        record_fate(&mut row, item, layout, i);
        if let (true, Decision::Stubbed { reason, .. }) = (window.edited[i], &mut row.decision) {
            *reason = StubReason::ClearToolUses;
        }
        if item.chunk >= carry.chunks {
            new_rows[item.chunk - carry.chunks] = row;
            continue;
        }
        if carry.result.decisions[item.chunk] != row {
            carry.cut.record(item.chunk, &row);
            carry.result.decisions.set(item.chunk, row);
        }
    }
    for row in new_rows {
        let index = carry.result.decisions.len();
        carry.cut.record(index, &row);
        carry.result.decisions.push(row);
    }
}

/// Whether `carry` shows the chunk at `index` as the `clear_tool_uses`
/// edit stubbed it.
fn was_edited(carry: &LastBuild, index: usize) -> bool {
    let row = carry
        .result
        .decisions
        .get(index)
        .filter(|_| index < carry.chunks);
    row.is_some_and(|row| {
        matches!(
            row.decision,
            Decision::Stubbed {
                reason: StubReason::ClearToolUses,
                ..
            }
        )
    })
}

/// The chunks the last build dropped that this plan leaves out, and their
/// tokens: all it dropped but those planned again.
fn frozen_counts(carry: &LastBuild, window: &Window) -> (usize, usize) {
    let Some(elided) = carry.result.elided else {
        return (0, 0);
    };
    let rows = &carry.result.decisions;
    let planned_dropped = window
        .items
        .iter()
        .filter(|item| item.chunk < carry.chunks && !rows[item.chunk].is_included());
    let (count, tokens) = planned_dropped.fold((0, 0), |(count, tokens), item| {
        (count + 1, tokens + rows[item.chunk].tokens)
    });
    (elided.chunks - count, elided.tokens - tokens)
}

/// The chunks the next plan starts from: those kept or stubbed, and the
/// oldest dropped unit.
fn still_planned(items: &[Item], ladder: &Ladder, layout: &Layout) -> Vec<usize> {
    let dropped = |i: usize| layout.fates[i] == Fate::Dropped;
    let oldest = (0..items.len()).find(|&i| dropped(i));
    let unit = oldest.and_then(|i| ladder.units.iter().find(|unit| unit.items.contains(&i)));
    items
        .iter()
        .enumerate()
        .filter(|(i, _)| !dropped(*i) || unit.is_some_and(|u| u.items.contains(i)))
        .map(|(_, item)| item.chunk)
        .collect()
}

/// Puts the plan's messages and counts in `carry`'s result, with what they
/// share with the last prompt.
fn report_plan(carry: &mut LastBuild, assembly: Assembly, layout: &Layout) {
    let messages: Rows<_> = assembly.messages.into();
    let fingerprints = fingerprints(&messages, &assembly.growable);
    let stable = carry.stable_prefix_tokens(&messages, &fingerprints);
    let result = &mut carry.result;
    result.stable_prefix_tokens = Some(stable);
    result.messages = messages;
    result.fingerprints = fingerprints;
    result.token_count = layout.total;
    result.elided = layout.elision;
    result.trim_target = layout.trim_target;
    result.last_part = assembly.last_part;
}
