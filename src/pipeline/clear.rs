//! A session's turn under a lone `clear_tool_uses` edit, made as an
//! extension of its last build (see `extend`).
//!
//! The full pipeline measures the whole history every turn: a session of a
//! million tokens under the edit would cost the session's size each turn.
//! When a turn only appended chunks, what the edit does differs from the
//! last build's by the tool uses that left `keep`'s window: they are
//! stubbed in place in the last prompt (their messages written again, the
//! others as they were), and the two measures the edit reports (the prompt
//! with every item kept, before the edit and after it) grow by what the turn
//! appended. The last build's [`Tally`] comes from the full pipeline's edit
//! stage. Whatever the tally cannot follow sends the turn to the full
//! pipeline, which makes a new one: an edit that did not apply, a use to
//! clear in the newest tool use or in the last build's last message while
//! the turn joins it, a stub that does not start cleanly, a last build
//! whose last part is not its last item, a warning about a named tool that
//! a new chunk may lift. A use cleared as it arrives joins the prompt as
//! its stub; an edited prompt that no longer fits is planned again over
//! the last prompt (`replan`), the edit's stubs first.

use std::sync::Arc;

use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use super::Build;
use super::extend::Appended;
use crate::budget::{
    AppliedEdit, ChunkDecision, Decision, DropReason, StubReason, Tally, Timeline, ToolUse,
    protects_itself,
};
use crate::error::Result;
use crate::model::context_management::ClearToolUses;
use crate::model::roles::Role;
use crate::output::cache::{Unchanged, stable_prefix_after};
use crate::output::earlier::Earlier;
use crate::output::last_build::LastBuild;
use crate::output::message::MessageFingerprint;
use crate::tokens::parts::CountedText;

/// A chunk this turn's edit stubs, and where it stands.
#[derive(Clone)]
struct Cleared {
    index: usize,
    role: Role,
    part: Arc<CountedText>,
    stub: Arc<CountedText>,
    place: Place,
}

/// Where a chunk the turn's edit stubs stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// Kept whole in the last prompt: in this message, at this span.
    Shown(usize, usize),
    /// Stubbed for the budget or dropped in the last prompt, which shows
    /// it as before.
    Hidden,
    /// Appended this turn: it joins the prompt as its stub.
    New,
}

/// What this turn's edit does to the last build.
#[derive(Clone)]
pub(super) struct Clearing {
    tally: Tally,
    cleared: Vec<Cleared>,
    /// Tokens the new stubs of old chunks save in the prompt.
    saved: isize,
}

impl Clearing {
    /// Tokens of the prompt grown to `grown` once the new stubs stand in.
    pub(super) fn total(&self, grown: usize) -> isize {
        grown as isize - self.saved
    }

    /// The chunks this turn's edit stubs.
    pub(super) fn chunks(&self) -> impl Iterator<Item = usize> + '_ {
        self.cleared.iter().map(|c| c.index)
    }

    /// The stubs this turn's edit puts in place of bodies the last
    /// prompt shows, by chunk.
    pub(super) fn stubs(&self) -> FxHashMap<usize, Arc<CountedText>> {
        let shown = self
            .cleared
            .iter()
            .filter(|c| matches!(c.place, Place::Shown(..)));
        shown.map(|c| (c.index, Arc::clone(&c.stub))).collect()
    }

    /// The first message of the last prompt that the edit's stubs write
    /// again.
    pub(super) fn first_rewritten(&self) -> Option<usize> {
        let shown = self.cleared.iter().filter_map(|c| match c.place {
            Place::Shown(message, _) => Some(message),
            _ => None,
        });
        shown.min()
    }
}

impl Build<'_> {
    /// What the edit does this turn to `carry`, the `appended` chunks (their
    /// steps in `timeline`) given: those it clears are appended as their
    /// stubs. `None` when the full pipeline must build it.
    ///
    /// # Errors
    ///
    /// As the pipeline, for a chunk rendered again.
    pub(super) fn clearing(
        &mut self,
        carry: &LastBuild,
        appended: &mut [Appended<'_>],
        timeline: &Timeline,
    ) -> Result<Option<Clearing>> {
        let Some(mut tally) = carry.tally.clone() else {
            return Ok(None);
        };
        // A warning about a tool the edit names may go with a new chunk.
        let warnings = &carry.result.warnings;
        let tools = appended.iter().filter_map(|a| a.chunk.tool.as_deref());
        if !self.last_part_is_last_item(carry)
            || tools.into_iter().any(|t| tally.may_unwarn(t, warnings))
        {
            return Ok(None);
        }
        let new = appended.iter().filter(|a| a.part.is_some());
        tally.take_uses(new.map(|a| a.index), self.state);
        let mut cleared = Vec::new();
        for tool_use in tally.spare_newest() {
            let before = cleared.len();
            let turn = (carry, &mut *appended);
            if !self.clear_use(turn, (&tally.edit, &tool_use), timeline, &mut cleared)? {
                return Ok(None);
            }
            tally.cleared += usize::from(cleared.len() > before);
        }
        Ok(Some(Clearing {
            tally,
            cleared,
            saved: 0,
        }))
    }

    /// Measures `clearing` on `carry` grown by `growth` tokens with the
    /// `appended` chunks, in new messages only when `closed`: the edit's
    /// two measures and what the new stubs save. `false` when the edit no
    /// longer fires or frees too little, or would change the last message
    /// the turn grows.
    pub(super) fn measure(
        &self,
        clearing: &mut Clearing,
        (carry, appended): (&LastBuild, &[Appended<'_>]),
        (growth, closed): (isize, bool),
    ) -> bool {
        let (mut unedited, mut edited) = (growth, growth);
        for c in &clearing.cleared {
            let saving = saving(c, self.next_is_same_role(carry, appended, c));
            match c.place {
                Place::New => unedited += saving,
                Place::Shown(..) | Place::Hidden => edited -= saving,
            }
        }
        let tally = &mut clearing.tally;
        tally.unedited = tally.unedited.saturating_add_signed(unedited);
        tally.edited = tally.edited.saturating_add_signed(edited);
        let freed = tally.unedited as i64 - tally.edited as i64;
        let at_least = i64::try_from(tally.edit.at_least()).unwrap_or(i64::MAX);
        if !tally.edit.fires(tally.unedited, tally.uses) || freed < at_least {
            return false;
        }
        let messages = &carry.result.messages;
        let mut saved = 0;
        for c in &clearing.cleared {
            let Place::Shown(m, span) = c.place else {
                continue;
            };
            // The last message may change only when the turn starts a new one.
            if m + 1 == messages.len() && !closed {
                return false;
            }
            let message = &messages[m];
            saved += saving(c, message.spans[span].end < message.content.len());
        }
        clearing.saved = saved;
        true
    }

    /// Adds to `cleared` what clearing `tool_use` stubs, giving the new
    /// chunks among them their stubs; `false` when the extension cannot
    /// follow it.
    fn clear_use(
        &mut self,
        (carry, appended): (&LastBuild, &mut [Appended<'_>]),
        (edit, tool_use): (&ClearToolUses, &ToolUse),
        timeline: &Timeline,
        cleared: &mut Vec<Cleared>,
    ) -> Result<bool> {
        let state = self.state;
        let members = || std::iter::once(tool_use.call).chain(tool_use.results.iter().copied());
        // The newest tool use's protection and squeeze: the full pipeline.
        if members().any(|i| timeline.anchors(i, &state.chunks[i])) {
            return Ok(false);
        }
        let tool = state.chunks[tool_use.call].tool.as_deref();
        let pinned = |i: usize| protects_itself(&state.chunks[i]);
        let Some(stubs) = tool_use.stubbed_by(edit, tool, pinned) else {
            return Ok(true);
        };
        for index in stubs {
            let chunk = &state.chunks[index];
            let (role, part) = match index.checked_sub(carry.chunks) {
                Some(new) => match &appended[new].part {
                    Some((role, part)) => (*role, Arc::clone(part)),
                    None => return Ok(false),
                },
                None => {
                    let prepared = self.prepared(index, chunk)?;
                    (prepared.role, prepared.part)
                }
            };
            let renderer = self.settings.renderers.renderer_for(chunk);
            let Some(stub) = self.preparer.stub_always(chunk, renderer, &part) else {
                continue;
            };
            let Some(place) = place_of(carry, index).filter(|_| stub.clean_start) else {
                return Ok(false);
            };
            if let Some(a) = (place == Place::New).then(|| &mut appended[index - carry.chunks]) {
                stub_row(&mut a.row, (&part, &stub), StubReason::ClearToolUses);
                a.part = Some((role, Arc::clone(&stub)));
            }
            cleared.push(Cleared {
                index,
                role,
                part,
                stub,
                place,
            });
        }
        Ok(true)
    }

    /// Whether the last build's last item, every item kept, is its prompt's
    /// last part: then what the turn appends grows the prompt with every
    /// item kept, edited or not, by what it grows the prompt.
    fn last_part_is_last_item(&self, carry: &LastBuild) -> bool {
        let rows = &carry.result.decisions;
        let last = (0..carry.chunks).rev().find(|&i| self.is_item(&rows[i], i));
        let (Some(last), Some(message)) = (last, carry.result.messages.last()) else {
            return false;
        };
        matches!(
            rows[last].decision,
            Decision::Kept | Decision::Truncated { .. }
        ) && message.chunk_ids.last() == Some(&rows[last].id)
            && message.spans.last().map(|s| s.end) == Some(message.content.len())
    }

    /// Whether the chunk at `index`, judged as `row`, is a planner item:
    /// in the history (not filtered out, orphaned or folded) outside the
    /// system message.
    fn is_item(&self, row: &ChunkDecision, index: usize) -> bool {
        let chunk = &self.state.chunks[index];
        let history = match row.decision {
            Decision::Dropped { reason } => reason == DropReason::Budget,
            _ => true,
        };
        history && self.settings.renderers.renderer_for(chunk).role(chunk) != Role::System
    }

    /// Whether the item after `cleared`, every item kept, shares its
    /// message: it has the same role.
    fn next_is_same_role(
        &self,
        carry: &LastBuild,
        appended: &[Appended<'_>],
        cleared: &Cleared,
    ) -> bool {
        let rows = &carry.result.decisions;
        let old = (cleared.index + 1..carry.chunks).find(|&i| self.is_item(&rows[i], i));
        let role = match old {
            Some(i) => {
                let chunk = &self.state.chunks[i];
                Some(self.settings.renderers.renderer_for(chunk).role(chunk))
            }
            None => (appended.iter())
                .filter(|a| a.index > cleared.index)
                .find_map(|a| a.part.as_ref().map(|(role, _)| *role)),
        };
        role == Some(cleared.role)
    }
}

/// A body and the stub that replaces it in a message.
pub(super) struct StubbedPart<'a> {
    pub(super) part: &'a CountedText,
    pub(super) stub: &'a CountedText,
}

impl StubbedPart<'_> {
    /// Tokens the stub saves over the body in a message, followed by
    /// another part or not.
    fn saving(&self, followed: bool) -> isize {
        self.part.in_message(followed) as isize - self.stub.in_message(followed) as isize
    }
}

impl Cleared {
    fn stubbed(&self) -> StubbedPart<'_> {
        StubbedPart {
            part: &self.part,
            stub: &self.stub,
        }
    }
}

/// Tokens `cleared`'s stub saves over its body in a message, followed by
/// another part or not.
fn saving(cleared: &Cleared, followed: bool) -> isize {
    cleared.stubbed().saving(followed)
}

/// Records in `row` (as prepared, or as a budget stub) that its chunk,
/// rendered as `part`, was stubbed to `stub`, and why.
pub(super) fn stub_row(
    row: &mut ChunkDecision,
    (part, stub): (&CountedText, &CountedText),
    reason: StubReason,
) {
    if let Decision::Truncated { tokens_before, .. } = row.decision {
        row.truncated_from = Some(tokens_before);
    }
    row.decision = Decision::Stubbed {
        tokens_before: part.alone(),
        tokens_after: stub.alone(),
        reason,
    };
    row.tokens = stub.alone();
}

/// Where the chunk at `index` stands in `carry`'s prompt; `None` where the
/// extension cannot follow it.
fn place_of(carry: &LastBuild, index: usize) -> Option<Place> {
    let Some(row) = carry
        .result
        .decisions
        .get(index)
        .filter(|_| index < carry.chunks)
    else {
        return Some(Place::New);
    };
    match row.decision {
        Decision::Kept | Decision::Truncated { .. } => shown_at(carry, index),
        Decision::Stubbed {
            reason: StubReason::Budget,
            ..
        }
        | Decision::Dropped {
            reason: DropReason::Budget,
        } => Some(Place::Hidden),
        _ => None,
    }
}

/// Where the last prompt shows the chunk at `index`: its message and span.
fn shown_at(carry: &LastBuild, index: usize) -> Option<Place> {
    let id = &carry.result.decisions[index].id;
    let messages = &carry.result.messages;
    (0..messages.len()).rev().find_map(|m| {
        let message = &messages[m];
        let span = message.chunk_ids.iter().position(|c| c == id)?;
        (message.spans.len() == message.chunk_ids.len()).then_some(Place::Shown(m, span))
    })
}

impl LastBuild {
    /// Applies `clearing` to this build, grown by the turn: the new stubs'
    /// rows, messages and tokens, and the edit's report. Returns the first
    /// message written again.
    pub(super) fn clear(&mut self, clearing: Clearing) -> Option<usize> {
        let first_rewritten = clearing.first_rewritten();
        let Clearing {
            tally,
            cleared,
            saved,
        } = clearing;
        let mut untrimmed_added = 0;
        for c in &cleared {
            if c.place != Place::Hidden {
                untrimmed_added += (c.part.alone()).saturating_sub(c.stub.alone()) as u64;
            }
            // A new chunk's row comes with it; a dropped one stays dropped.
            let row = (self.result.decisions.get(c.index)).filter(|_| c.place != Place::New);
            let Some(mut row) = row.filter(|row| row.is_included()).cloned() else {
                continue;
            };
            stub_row(&mut row, (&c.part, &c.stub), StubReason::ClearToolUses);
            self.cut.record(c.index, &row);
            self.result.decisions.set(c.index, row);
            self.note_changed(c.index);
        }
        let mut by_message: FxHashMap<usize, SmallVec<[(usize, StubbedPart<'_>); 2]>> =
            FxHashMap::default();
        for c in &cleared {
            if let Place::Shown(message, span) = c.place {
                by_message
                    .entry(message)
                    .or_default()
                    .push((span, c.stubbed()));
            }
        }
        for (message, stubs) in by_message {
            self.rewrite(message, &stubs);
        }
        let result = &mut self.result;
        result.token_count = result.token_count.saturating_add_signed(-saved);
        self.untrimmed = self.untrimmed.map(|u| u + untrimmed_added);
        self.report_edit_of(tally);
        first_rewritten
    }

    /// Reports what `clearing`'s edit cleared and freed, and keeps its
    /// tally for the next turn: the plan ran again with its stubs.
    pub(super) fn report_edit(&mut self, clearing: Clearing) {
        self.report_edit_of(clearing.tally);
    }

    fn report_edit_of(&mut self, tally: Tally) {
        self.result.applied_edits = vec![AppliedEdit::ClearToolUses {
            cleared_tool_uses: tally.cleared,
            cleared_input_tokens: tally.unedited as i64 - tally.edited as i64,
        }];
        self.tally = Some(tally);
    }

    /// What the prompt shares with `previous`, whose messages before
    /// `first` it shows unchanged.
    pub(super) fn report_cache(&mut self, previous: &impl Earlier, first: usize) {
        let unchanged = Unchanged {
            messages: first,
            tokens: previous.tokens_before(first),
        };
        let result = &mut self.result;
        let (messages, prints) = (&result.messages, &result.fingerprints);
        let old = previous.fingerprints_from(first);
        let stable = stable_prefix_after(messages, prints, old, unchanged);
        result.stable_prefix_tokens = Some(stable);
        result.cache = Some(result.cache_after(previous, stable, unchanged));
    }

    /// Writes message `m` again with the `stubs` (by span) in place of
    /// their bodies, with its tokens and fingerprint.
    pub(super) fn rewrite(&mut self, m: usize, stubs: &[(usize, StubbedPart<'_>)]) {
        let mut message = self.result.messages[m].clone();
        let mut growable = self.result.fingerprints[m].growable;
        let old = message.content.clone();
        let mut text = String::with_capacity(old.len());
        let mut at = 0;
        for (k, span) in message.spans.iter_mut().enumerate() {
            text.push_str(&old[at..span.start]);
            let start = text.len();
            let followed = span.end < old.len();
            match stubs.iter().find(|(s, _)| *s == k) {
                Some((_, c)) => {
                    text.push_str(&c.stub.text);
                    message.tokens = message.tokens.saturating_add_signed(-c.saving(followed));
                    let head = |t: &CountedText| if followed { t.joined() } else { t.head() };
                    growable = (growable + head(c.stub)).saturating_sub(head(c.part));
                }
                None => text.push_str(&old[span.clone()]),
            }
            at = span.end;
            *span = start..text.len();
        }
        text.push_str(&old[at..]);
        message.content = text.into();
        let print = MessageFingerprint::of(&message, growable);
        self.result.fingerprints.set(m, print);
        self.result.messages.set(m, message);
    }
}
