//! A build's `context_management` edits, applied to its rendered history
//! before the plan (see [`ContextManagement`] for the semantics): cleared
//! thinking leaves the history, cleared tool uses become the ladder's first
//! steps (stubs every later step keeps), and each edit that cleared
//! something is reported with the tokens it freed, measured exactly on the
//! prompt before and after it.

use std::sync::Arc;

use rustc_hash::FxHashSet;

use super::history::{History, release};
use super::{Build, Ladder};
use crate::budget::{
    AppliedEdit, ContextManagement, Decision, DropReason, Fate, Item, Planner, Step, Tally,
    all_start_clean, protects_itself, tool_uses,
};
use crate::model::context_management::{ClearThinking, ClearToolUses, ContextEdit};
use crate::model::roles::ChunkKind;
use crate::tokens::parts::CountedText;

/// What a build's edits did.
#[derive(Debug, Default)]
pub(super) struct Edited {
    /// The stubs of the cleared tool uses: the ladder's first steps.
    pub(super) steps: Vec<Step>,
    /// The items those steps stub (their decisions name the edit).
    pub(super) cleared: FxHashSet<usize>,
    /// The edits that cleared something, in the order applied.
    pub(super) applied: Vec<AppliedEdit>,
    /// Exact tokens of the prompt with the edits so far, every other item
    /// kept: what the next edit measures what it frees against.
    tokens: usize,
}

impl Build<'_> {
    /// Applies `management`'s edits to `history`: thinking first, then
    /// tool uses, each edit of a type in its order.
    pub(super) fn edit(
        &mut self,
        management: &ContextManagement,
        history: &mut History<'_>,
        system: &[Arc<CountedText>],
    ) -> Edited {
        let unedited = self.tokens(system, &history.items, &[]);
        let mut edited = Edited {
            tokens: unedited,
            ..Edited::default()
        };
        for edit in &management.edits {
            if let ContextEdit::ClearThinking(edit) = edit
                && let Some(applied) = self.clear_thinking(edit, history, system, &mut edited)
            {
                edited.applied.push(applied);
            }
        }
        for edit in &management.edits {
            if let ContextEdit::ClearToolUses(edit) = edit
                && let Some(applied) =
                    self.clear_tool_uses(edit, history, (system, unedited), &mut edited)
            {
                edited.applied.push(applied);
            }
        }
        self.keep_tally(management, history, (unedited, &edited));
        edited
    }

    /// Keeps in the cache what a lone `clear_tool_uses` edit that applied
    /// measured and cleared, for a session's next turn to carry on, when
    /// the turn's extension can follow it: every part starts cleanly and
    /// no compaction or chunk outside the state moves an item.
    fn keep_tally(
        &mut self,
        management: &ContextManagement,
        history: &History<'_>,
        (unedited, edited): (usize, &Edited),
    ) {
        let ([ContextEdit::ClearToolUses(edit)], [applied]) =
            (&management.edits[..], &edited.applied[..])
        else {
            return;
        };
        let AppliedEdit::ClearToolUses {
            cleared_tool_uses, ..
        } = applied
        else {
            return;
        };
        let follows = self.compaction.is_none()
            && self.outside.chunks == 0
            && all_start_clean(&history.items);
        if follows {
            let (items, tokens) = ((&history.items[..], self.state), (unedited, edited.tokens));
            self.cache.tally = Some(Tally::of(edit, items, tokens, *cleared_tool_uses));
        }
    }

    /// Exact tokens of the prompt of `items` with `steps` applied, every
    /// other item kept.
    fn tokens(&self, system: &[Arc<CountedText>], items: &[Item], steps: &[Step]) -> usize {
        let ladder = Ladder {
            units: Vec::new(),
            steps: steps.to_vec(),
            sticky: 0,
        };
        let planner = Planner {
            items,
            ..self.planner(system, &ladder, (0, 0))
        };
        planner.layout(steps.len(), true).total
    }

    /// Removes the thinking of all but the newest thinking turns the edit
    /// keeps (protected thinking stays).
    fn clear_thinking(
        &mut self,
        edit: &ClearThinking,
        history: &mut History<'_>,
        system: &[Arc<CountedText>],
        edited: &mut Edited,
    ) -> Option<AppliedEdit> {
        let keep = edit.keeps()?;
        let chunks = &self.state.chunks;
        let age = |item: &Item| history.timeline.steps_after(item.chunk);
        let is_thinking = |item: &Item| chunks[item.chunk].kind == ChunkKind::Thinking;
        let mut turns: Vec<usize> = history
            .items
            .iter()
            .filter(|i| is_thinking(i))
            .map(age)
            .collect();
        turns.sort_unstable();
        turns.dedup();
        let kept = &turns[..keep.min(turns.len())];
        let cleared: Vec<bool> = history
            .items
            .iter()
            .map(|item| is_thinking(item) && !item.protected && !kept.contains(&age(item)))
            .collect();
        if !cleared.contains(&true) {
            return None;
        }
        let before = edited.tokens;
        let mut cleared_turns: Vec<usize> = Vec::new();
        let mut flags = cleared.iter();
        history.items.retain_mut(|item| {
            if !flags.next().copied().unwrap_or(false) {
                return true;
            }
            let decision = &mut history.decisions[item.chunk];
            decision.tokens = item.part.alone();
            decision.decision = Decision::Dropped {
                reason: DropReason::ClearThinking,
            };
            let turn = history.timeline.steps_after(item.chunk);
            if !cleared_turns.contains(&turn) {
                cleared_turns.push(turn);
            }
            release(item, Some(Fate::Dropped), self.cache);
            false
        });
        let after = self.tokens(system, &history.items, &[]);
        edited.tokens = after;
        Some(AppliedEdit::ClearThinking {
            cleared_thinking_turns: cleared_turns.len(),
            cleared_input_tokens: before as i64 - after as i64,
        })
    }

    /// Stubs the results (and, as the edit says, the calls) of every tool
    /// use older than the newest the edit keeps, when it fires and frees
    /// enough; `unedited` is the prompt's tokens before any edit, with
    /// `system` as its system message.
    fn clear_tool_uses(
        &self,
        edit: &ClearToolUses,
        history: &mut History<'_>,
        (system, unedited): (&[Arc<CountedText>], usize),
        edited: &mut Edited,
    ) -> Option<AppliedEdit> {
        let chunks = &self.state.chunks;
        let items = history.items.iter().enumerate();
        let uses = tool_uses(items.map(|(i, item)| (i, &chunks[item.chunk])));
        if !edit.fires(unedited, uses.len()) {
            return None;
        }
        let old = uses.len().saturating_sub(edit.keeps());
        let (mut steps, mut forced, mut cleared) = (Vec::new(), Vec::new(), 0);
        for tool_use in &uses[..old] {
            let chunk_of = |i: usize| &chunks[history.items[i].chunk];
            let tool = chunk_of(tool_use.call).tool.as_deref();
            let pinned = |i: usize| protects_itself(chunk_of(i));
            let Some(mut stubs) = tool_use.stubbed_by(edit, tool, pinned) else {
                continue;
            };
            // What an earlier edit cleared is not this edit's to report.
            stubs.retain(|i| !edited.cleared.contains(i));
            let before = steps.len();
            for i in stubs {
                if self.ensure_stub(&mut history.items[i], i, &mut forced) {
                    steps.push(Step::Stub(i));
                }
            }
            cleared += usize::from(steps.len() > before);
        }
        let with: Vec<Step> = edited.steps.iter().chain(&steps).copied().collect();
        let before = edited.tokens;
        let after = self.tokens(system, &history.items, &with);
        let freed = before as i64 - after as i64;
        if cleared == 0 || freed < i64::try_from(edit.at_least()).unwrap_or(i64::MAX) {
            for i in forced {
                history.items[i].stub = None;
            }
            return None;
        }
        let newly: FxHashSet<usize> = steps
            .iter()
            .filter_map(|step| match step {
                Step::Stub(i) => Some(*i),
                Step::Drop(_) => None,
            })
            .collect();
        // A cleared result of the newest tool use shows its stub: the
        // budget has no body of it left to cut.
        history
            .newest_results
            .retain(|chunk| !newly.iter().any(|&i| history.items[i].chunk == *chunk));
        edited.cleared.extend(newly);
        edited.steps = with;
        edited.tokens = after;
        Some(AppliedEdit::ClearToolUses {
            cleared_tool_uses: cleared,
            cleared_input_tokens: freed,
        })
    }

    /// Gives `item`, the `i`-th, a stub if it has none (noting it in
    /// `forced`, to take back if the edit does not apply); `false` when its
    /// renderer has none.
    fn ensure_stub(&self, item: &mut Item, i: usize, forced: &mut Vec<usize>) -> bool {
        if item.stub.is_some() {
            return true;
        }
        let chunk = &self.state.chunks[item.chunk];
        let renderer = self.settings.renderers.renderer_for(chunk);
        item.stub = self.preparer.stub_always(chunk, renderer, &item.part);
        if item.stub.is_some() {
            forced.push(i);
        }
        item.stub.is_some()
    }
}
