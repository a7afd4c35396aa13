//! A session's turn whose grown prompt no longer fits, when stubbing more
//! old bodies is what the plan would do: the stubs are written in place.
//!
//! The plan of such a turn (`replan`) repeats the last cut, then stubs
//! disposable bodies oldest first, then drops units, until the prompt is
//! within the trim target. Its search probes step counts from the last cut
//! outward ([`fewest_steps_within`]); while every probe is a stub of a
//! body in the last prompt, no probe needs the plan:
//!
//! - a stub leaves every message where it was, and every part starts
//!   cleanly, so a probe's total is the grown prompt's less what each stub
//!   before it saves in its message (its body's tokens less its own,
//!   joined or alone);
//! - the target is the low-water mark whenever the protected items alone,
//!   with the marker of all the rest, would sit below the mark at the mark
//!   ([`trim_target`] is non-decreasing in the fully trimmed total, and the
//!   mark at 0): their sum bounds that total.
//!
//! So the turn reads the session's rows once (the protected items, the
//! bodies a stub may replace: a few nanoseconds each) and renders only the
//! stubs its probes reach; the chosen stubs are written in place, as
//! `clear` writes the edit's. A probe past those stubs, a target the bound
//! cannot settle, or anything unusual (a compaction in effect, a stub that
//! does not start cleanly, a body in the turn's own chunks) sends the turn
//! to the plan, which gives the same answer the long way.

use std::sync::Arc;

use rustc_hash::FxHashSet;

use super::Build;
use super::clear::{StubbedPart, stub_row};
use super::extend::Appended;
use crate::budget::{
    ChunkDecision, Decision, StubReason, Timeline, elided_marker, fewest_steps_within,
    framing_table, trim_target,
};
use crate::model::roles::Retention;
use crate::output::last_build::LastBuild;
use crate::tokens::parts::CountedText;

/// The budget's new stubs of a turn, and the prompt they leave.
pub(super) struct Trim {
    stubs: Vec<BudgetStub>,
    /// Tokens of the prompt with them.
    total: usize,
    /// The trim target the plan would report.
    target: usize,
}

/// A body in the last prompt that the turn stubs for the budget.
struct BudgetStub {
    index: usize,
    /// Where the last prompt shows it: message and span.
    message: usize,
    span: usize,
    part: Arc<CountedText>,
    stub: Arc<CountedText>,
}

/// What one read of the rows finds: the bodies the plan may stub first, in
/// order, and what bounds the fully trimmed prompt.
struct Rows {
    /// Unprotected disposable bodies kept in the last prompt, oldest first,
    /// each with its place among the chunks the history messages show.
    stubbable: Vec<(usize, usize)>,
    /// Tokens the protected items cost at most, framing included.
    protected: usize,
    /// Chunks and tokens the fully trimmed prompt drops besides those
    /// already elided.
    dropped: (usize, usize),
}

/// The state of the search's walk over the last prompt: the stubs it has
/// rendered, what each saves, and where it has read the messages to.
struct Walk {
    stubs: Vec<BudgetStub>,
    /// Tokens saved by the first `k` stubs, at `k`.
    saved: Vec<usize>,
    /// Next of `Rows::stubbable` to look at.
    next: usize,
    /// The message and the place of its first chunk among those shown.
    message: usize,
    first_shown: usize,
}

impl Build<'_> {
    /// This turn's trim as stubs in place, when the plan would only stub
    /// bodies of `carry`'s prompt: the turn appended `appended` (its steps
    /// in `timeline`), lifted the protection of `lifted`, and its edit
    /// clears `clears`; the grown prompt costs `grown` tokens and its
    /// first new part joins the last message when `joins_last`. `None`
    /// when the plan must run.
    pub(super) fn trim_in_place(
        &mut self,
        carry: &LastBuild,
        (appended, timeline): (&[Appended<'_>], &Timeline),
        (lifted, clears): (&[(usize, ChunkDecision)], &FxHashSet<usize>),
        (grown, joins_last): (usize, bool),
    ) -> Option<Trim> {
        if carry.result.compaction.is_some() {
            return None;
        }
        let rows = self.read_rows(carry, (appended, timeline), (lifted, clears))?;
        let target = self.settled_target(carry, &rows)?;
        let mut walk = Walk {
            stubs: Vec::new(),
            saved: vec![0],
            next: 0,
            message: usize::from(carry.result.system_message().is_some()),
            first_shown: 0,
        };
        let total_at = |k: usize| {
            while walk.saved.len() <= k {
                self.walk_on(carry, &rows, &mut walk, joins_last)?;
            }
            grown.checked_sub(walk.saved[k])
        };
        let k = fewest_steps_within((1, usize::MAX, usize::MAX), target, total_at)?;
        walk.stubs.truncate(k);
        Some(Trim {
            total: grown - walk.saved[k],
            stubs: walk.stubs,
            target,
        })
    }

    /// Reads `carry`'s planned rows and the turn's new ones (see [`Rows`]);
    /// `None` for a row the trim does not follow.
    fn read_rows(
        &mut self,
        carry: &LastBuild,
        (appended, timeline): (&[Appended<'_>], &Timeline),
        (lifted, clears): (&[(usize, ChunkDecision)], &FxHashSet<usize>),
    ) -> Option<Rows> {
        let (state, policy) = (self.state, self.preparer.policy);
        let mut rows = Rows {
            stubbable: Vec::new(),
            protected: 0,
            dropped: (0, 0),
        };
        let mut decisions = carry.result.decisions.iter();
        let (mut at, mut shown) = (0, 0);
        for &index in &carry.planned {
            let row = decisions.nth(index.checked_sub(at)?)?;
            at = index + 1;
            let row = lifted
                .iter()
                .find(|(i, _)| *i == index)
                .map_or(row, |(_, lifted)| lifted);
            let kept = match row.decision {
                Decision::Dropped { .. } => continue,
                Decision::Stubbed { .. } => false,
                Decision::Kept | Decision::Truncated { .. } => true,
            };
            shown += 1;
            let chunk = &state.chunks[index];
            if row.protected {
                // The protected stay as they are: stubbed only by an edit,
                // which clears no protected use.
                let prepared = self.prepared(index, chunk).ok().filter(|_| kept)?;
                rows.protected += self.most_a_part_costs(&prepared.part);
                continue;
            }
            rows.dropped = (rows.dropped.0 + 1, rows.dropped.1 + body_tokens(row));
            let disposable = policy.retention_of(chunk, timeline.steps_after(index));
            if kept && !clears.contains(&index) && disposable == Retention::Disposable {
                rows.stubbable.push((index, shown - 1));
            }
        }
        for a in appended {
            let Some((_, part)) = &a.part else { continue };
            if a.row.protected {
                rows.protected += self.most_a_part_costs(part);
            } else {
                rows.dropped = (rows.dropped.0 + 1, rows.dropped.1 + body_tokens(&a.row));
            }
        }
        Some(rows)
    }

    /// The most a part costs in a message of any role: framing, and its
    /// tokens alone or followed by another.
    fn most_a_part_costs(&self, part: &CountedText) -> usize {
        let framing = framing_table(self.settings.framing, self.preparer.counter);
        framing.iter().max().copied().unwrap_or(0) + part.alone().max(part.joined())
    }

    /// The plan's trim target when the bound of the fully trimmed prompt
    /// settles it at the low-water mark; `None` otherwise.
    fn settled_target(&self, carry: &LastBuild, rows: &Rows) -> Option<usize> {
        let (settings, counter) = (self.settings, self.preparer.counter);
        let protocol = settings.renderers.protocol();
        let elided = carry.result.elided.map_or((0, 0), |e| (e.chunks, e.tokens));
        let marker = elided_marker(
            protocol,
            counter,
            (elided.0 + rows.dropped.0, elided.1 + rows.dropped.1),
        );
        let system = carry.result.system_message().map_or(0, |m| m.tokens);
        // A history-start message, should the fully trimmed history not
        // open with the user's.
        let start = match settings.user_first {
            true => self.most_a_part_costs(&self.history_start()),
            false => 0,
        };
        let bound = system
            + settings.framing.priming()
            + rows.protected
            + self.most_a_part_costs(&marker)
            + start;
        let (available, low_water) = (self.budget.available, self.preparer.policy.low_water);
        let target = trim_target(available, low_water, bound);
        (bound <= available && target == trim_target(available, low_water, 0)).then_some(target)
    }

    /// Takes the next body of `rows` that has a stub into `walk`, with what
    /// stubbing it saves; `None` when there is none or the trim cannot
    /// follow it.
    fn walk_on(
        &mut self,
        carry: &LastBuild,
        rows: &Rows,
        walk: &mut Walk,
        joins_last: bool,
    ) -> Option<()> {
        let chunks = &self.state.chunks;
        loop {
            let &(index, shown) = rows.stubbable.get(walk.next)?;
            walk.next += 1;
            let chunk = &chunks[index];
            let part = self.prepared(index, chunk).ok()?.part;
            let Some(mut stub) = self.stub(index, chunk, &part) else {
                continue;
            };
            if !stub.clean_start {
                return None;
            }
            if stub.is_released() {
                self.cache.forget_stub(index);
                stub = self.stub(index, chunk, &part)?;
            }
            let (message, span) = place_of_shown(carry, walk, shown)?;
            let content = &carry.result.messages[message];
            if content.chunk_ids[span] != carry.result.decisions[index].id {
                return None;
            }
            let last = message + 1 == carry.result.messages.len();
            let followed = content.spans[span].end < content.content.len() || last && joins_last;
            let cost = |text: &CountedText| match followed {
                true => text.joined(),
                false => text.alone(),
            };
            let saved = cost(&part).checked_sub(cost(&stub))?;
            let so_far = walk.saved.last().copied().unwrap_or(0);
            walk.saved.push(so_far + saved);
            walk.stubs.push(BudgetStub {
                index,
                message,
                span,
                part,
                stub,
            });
            return Some(());
        }
    }

    /// The history-start note a user-first prompt opens with.
    fn history_start(&self) -> CountedText {
        let protocol = self.settings.renderers.protocol();
        let text = format!("<{}/>", crate::budget::HISTORY_START_TAG);
        CountedText::new(
            crate::render::history_note(protocol, text),
            self.preparer.counter,
        )
    }
}

/// Where `carry`'s history messages show the `shown`-th of the chunks they
/// show, reading on from where `walk` stopped.
fn place_of_shown(carry: &LastBuild, walk: &mut Walk, shown: usize) -> Option<(usize, usize)> {
    let messages = &carry.result.messages;
    loop {
        let message = messages.get(walk.message)?;
        let span = shown.checked_sub(walk.first_shown)?;
        if span < message.chunk_ids.len() {
            return (message.spans.len() == message.chunk_ids.len())
                .then_some((walk.message, span));
        }
        walk.first_shown += message.chunk_ids.len();
        walk.message += 1;
    }
}

/// Tokens of the body a row stands for, stubbed or not: what dropping its
/// chunk elides.
fn body_tokens(row: &ChunkDecision) -> usize {
    match row.decision {
        Decision::Stubbed { tokens_before, .. } => tokens_before,
        _ => row.tokens,
    }
}

impl LastBuild {
    /// Writes `trim`'s stubs in place in this build, grown by the turn:
    /// their rows, messages, the prompt's tokens and trim target. Returns
    /// the first message written again.
    pub(super) fn trim(&mut self, trim: Trim, cache: &mut super::BuildCache) -> Option<usize> {
        let mut untrimmed_added = 0;
        let mut by_message: Vec<(usize, Vec<(usize, StubbedPart<'_>)>)> = Vec::new();
        for s in &trim.stubs {
            let mut row = self.result.decisions[s.index].clone();
            stub_row(&mut row, (&s.part, &s.stub), StubReason::Budget);
            untrimmed_added += s.part.alone().saturating_sub(s.stub.alone()) as u64;
            self.cut.record(s.index, &row);
            self.result.decisions.set(s.index, row);
            cache.hold_released(s.index, &Arc::new(s.part.released()), Some(&s.stub));
            let part = StubbedPart {
                part: &s.part,
                stub: &s.stub,
            };
            match by_message.last_mut() {
                Some((m, parts)) if *m == s.message => parts.push((s.span, part)),
                _ => by_message.push((s.message, vec![(s.span, part)])),
            }
        }
        let first = by_message.first().map(|(m, _)| *m);
        for (message, parts) in &by_message {
            self.rewrite(*message, parts);
        }
        // The turn's cost untrimmed grows by the prompt's tokens (see
        // `untrimmed_after`), less than what the stubs left out.
        self.untrimmed = self.untrimmed.map(|u| u + untrimmed_added);
        let result = &mut self.result;
        result.token_count = trim.total;
        result.trim_target = Some(trim.target);
        first
    }
}
