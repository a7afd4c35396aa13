//! Writes a turn's [`Trim`] into the last build grown by the turn: the new
//! stubs in place (`clear`'s rewrite), the dropped parts taken out of
//! their messages, the messages around them joined where their roles now
//! meet, and the marker counted again. Only those messages are written;
//! the rest of the prompt is the last build's.

use std::ops::RangeInclusive;
use std::sync::Arc;

use smallvec::SmallVec;

use super::Build;
use super::assemble::growable_prefix;
use super::clear::{StubbedPart, stub_row};
use super::extend::Appended;
use super::trim::{Sources, Trim};
use super::trim_window::body_tokens;
use crate::budget::planner::role_index;
use crate::budget::{ChunkDecision, Decision, DropReason, StubReason};
use crate::model::chunk_id::{ChunkId, ChunkIds};
use crate::model::roles::Role;
use crate::output::last_build::LastBuild;
use crate::output::message::{ChunkSpans, ContextMessage, MessageFingerprint};
use crate::tokens::parts::{CountedText, SEPARATOR};

/// Where a trim finds the parts of the prompt it writes: their sources,
/// each message's first chunk (see [`first_ordinals`]), and the place of
/// each chunk the history showed.
struct Shown<'s> {
    sources: Sources<'s>,
    firsts: Vec<(usize, usize)>,
    places: Vec<usize>,
}

/// One part of a message written again: its text, counts and chunk.
struct Part<'m> {
    role: Role,
    text: &'m str,
    counts: Arc<CountedText>,
    id: Option<ChunkId>,
}

impl Build<'_> {
    /// Writes `trim` into `carry`, grown by the turn's `appended` chunks
    /// (their rows and planned chunks included). Returns the first
    /// message written again.
    pub(super) fn write_trim(
        &mut self,
        carry: &mut LastBuild,
        trim: &Trim,
        appended: &[Appended<'_>],
    ) -> Option<usize> {
        let shown = Shown {
            sources: trim.sources(appended),
            firsts: first_ordinals(carry),
            places: trim.shown_places(),
        };
        // What the prompt costs untrimmed changes by what the rows stub and
        // elide (see `BuildResult::untrimmed_tokens`); its tokens are added
        // as the turn ends (`untrimmed_after`).
        let mut untrimmed = 0;
        let mut first = self.write_stubs(carry, trim, &shown, &mut untrimmed)?;
        if !trim.drops.is_empty() {
            let dropped_from = self.write_drops(carry, trim, &shown, &mut untrimmed)?;
            first = Some(first.map_or(dropped_from, |f| f.min(dropped_from)));
        }
        carry.untrimmed = (carry.untrimmed).map(|u| u.saturating_add_signed(untrimmed));
        let last = (0..trim.window.places.len())
            .rev()
            .find(|&p| trim.shows_after(p))?;
        let result = &mut carry.result;
        let last_part = self.shown(&shown.sources, &trim.window, last)?.1;
        result.last_part = Some(last_part.released());
        result.token_count = trim.total;
        result.trim_target = Some(trim.target);
        first
    }

    /// Writes `trim`'s new stubs into `carry`: their rows, and their
    /// messages in place. Returns the first message written again, if any.
    fn write_stubs(
        &mut self,
        carry: &mut LastBuild,
        trim: &Trim,
        shown: &Shown<'_>,
        untrimmed: &mut i64,
    ) -> Option<Option<usize>> {
        let mut by_message: Vec<(usize, Vec<(usize, StubbedPart<'_>)>)> = Vec::new();
        for (place, part, stub) in &trim.stubs {
            let index = trim.window.places[*place].chunk;
            let mut row = carry.result.decisions[index].clone();
            *untrimmed -= stub_saving(&row);
            stub_row(&mut row, (part, stub), StubReason::Budget);
            *untrimmed += stub_saving(&row);
            carry.cut.record(index, &row);
            carry.result.decisions.set(index, row);
            let released = Arc::new(part.released());
            self.cache.hold_released(index, &released, Some(stub));
            let (message, span) = locate(&shown.firsts, shown.ordinal(*place)?)?;
            let stubbed = StubbedPart { part, stub };
            match by_message.last_mut() {
                Some((m, parts)) if *m == message => parts.push((span, stubbed)),
                _ => by_message.push((message, vec![(span, stubbed)])),
            }
        }
        for (message, parts) in &by_message {
            carry.rewrite(*message, parts);
        }
        Some(by_message.iter().map(|(m, _)| *m).min())
    }

    /// Takes `trim`'s drops out of `carry`: their rows, the planned
    /// chunks, and the messages around them written again with the new
    /// marker. Returns the first message written again.
    fn write_drops(
        &mut self,
        carry: &mut LastBuild,
        trim: &Trim,
        shown: &Shown<'_>,
        untrimmed: &mut i64,
    ) -> Option<usize> {
        let (elision, marker) = trim.elided.as_ref()?;
        let elided_before = carry.result.elided.map_or(0, |e| e.tokens);
        *untrimmed += elision.tokens as i64 - elided_before as i64;
        // Each message a drop touches, and whether its neighbours may join
        // it: it empties, or the marker comes in or goes out.
        let mut affected: Vec<(usize, bool)> = Vec::with_capacity(trim.drops.len() + 1);
        for &place in &trim.drops {
            let index = trim.window.places[place].chunk;
            let row = dropped_row(&carry.result.decisions[index]);
            *untrimmed -= stub_saving(&carry.result.decisions[index]);
            carry.cut.record(index, &row);
            carry.result.decisions.set(index, row);
            self.cache.release_texts(index);
            let message = locate(&shown.firsts, shown.ordinal(place)?)?.0;
            affected.push((
                message,
                shown.empties(trim, message)? || trim.marker_at == Some(place),
            ));
        }
        affected.extend(trim.marker_message.map(|m| (m, true)));
        // The next plan starts from what the prompt shows and the unit
        // the marker stands for.
        let mut place = 0;
        carry.planned.retain(|_| {
            place += 1;
            trim.still_planned(place - 1)
        });
        let first = self.first_trimmable(carry);
        let ranges = ranges_around(&affected, first, carry.result.messages.len());
        let (mut messages, mut prints) = (Vec::new(), Vec::new());
        for range in &ranges {
            let parts = self.parts_of(carry, trim, (range.clone(), shown), marker)?;
            let (written, printed) = joined(&parts, &trim.window.framing);
            messages.push((range.clone(), written));
            prints.push((range.clone(), printed));
        }
        carry.result.messages.splice(messages);
        carry.result.fingerprints.splice(prints);
        carry.result.elided = Some(*elision);
        ranges.first().map(|r| *r.start())
    }

    /// The parts the messages of `range` show once `trim` is in, in order.
    fn parts_of<'m>(
        &mut self,
        carry: &'m LastBuild,
        trim: &Trim,
        (range, shown): (RangeInclusive<usize>, &Shown<'_>),
        marker: &'m CountedText,
    ) -> Option<Vec<Part<'m>>> {
        let mut parts = Vec::new();
        // The marker stays where it was, or moves to the first chunk
        // dropped.
        let stays = trim.marker_at == trim.window.marker;
        for m in range {
            let message = carry.result.messages.get(m)?;
            let (ordinal, _) = *shown.firsts.get(m)?;
            let mut marker_due = stays && trim.marker_message == Some(m);
            for (k, (id, span)) in message.chunk_ids.iter().zip(&message.spans).enumerate() {
                let place = *shown.places.get(ordinal + k)?;
                if marker_due && trim.window.marker? < place {
                    parts.push(marker_part(marker));
                    marker_due = false;
                }
                if trim.marker_at == Some(place) {
                    parts.push(marker_part(marker));
                }
                if trim.dropped[place] {
                    continue;
                }
                let (role, counts) = self.shown(&shown.sources, &trim.window, place)?;
                parts.push(Part {
                    role,
                    text: &message.content[span.clone()],
                    counts,
                    id: Some(id.clone()),
                });
            }
            if marker_due {
                parts.push(marker_part(marker));
            }
        }
        Some(parts)
    }
}

impl Shown<'_> {
    /// The place among the chunks the history showed of the one at `place`.
    fn ordinal(&self, place: usize) -> Option<usize> {
        self.places.binary_search(&place).ok()
    }

    /// Whether `trim` drops every chunk of message `m`.
    fn empties(&self, trim: &Trim, m: usize) -> Option<bool> {
        let &(first, count) = self.firsts.get(m)?;
        let places = self.places.get(first..first + count)?;
        Some(places.iter().all(|&place| trim.dropped[place]))
    }
}

/// Per message of `carry`'s prompt, the place among the chunks its
/// history shows of its first chunk, and how many it shows (none in the
/// system message).
pub(super) fn first_ordinals(carry: &LastBuild) -> Vec<(usize, usize)> {
    let system = carry.result.system_message().is_some();
    let mut next = 0;
    (carry.result.messages.iter().enumerate())
        .map(|(m, message)| {
            let count = if m == 0 && system {
                0
            } else {
                message.chunk_ids.len()
            };
            next += count;
            (next - count, count)
        })
        .collect()
}

/// The message and span that show the `ordinal`-th chunk of the history.
pub(super) fn locate(firsts: &[(usize, usize)], ordinal: usize) -> Option<(usize, usize)> {
    let m = firsts.partition_point(|&(first, count)| first + count <= ordinal);
    let &(first, count) = firsts.get(m)?;
    (ordinal >= first && ordinal < first + count).then_some((m, ordinal - first))
}

/// The marker as a part of its message.
fn marker_part(marker: &CountedText) -> Part<'_> {
    Part {
        role: Role::User,
        text: &marker.text,
        counts: Arc::new(marker.released()),
        id: None,
    }
}

/// `parts` grouped into messages by role, and their fingerprints.
fn joined(
    parts: &[Part<'_>],
    framing: &[usize; 3],
) -> (Vec<ContextMessage>, Vec<MessageFingerprint>) {
    let (mut messages, mut prints) = (Vec::new(), Vec::new());
    let mut start = 0;
    while start < parts.len() {
        let role = parts[start].role;
        let end = (start..parts.len())
            .find(|&k| parts[k].role != role)
            .unwrap_or(parts.len());
        let (message, print) = message_of(role, &parts[start..end], framing);
        messages.push(message);
        prints.push(print);
        start = end;
    }
    (messages, prints)
}

/// One message of `parts`, as assembly writes it.
fn message_of(
    role: Role,
    parts: &[Part<'_>],
    framing: &[usize; 3],
) -> (ContextMessage, MessageFingerprint) {
    let texts = parts.iter().map(|part| part.text.len()).sum::<usize>();
    let separators = SEPARATOR.len() * parts.len().saturating_sub(1);
    let mut content = String::with_capacity(texts + separators);
    let mut spans = ChunkSpans::new();
    let mut chunk_ids = ChunkIds::default();
    let mut tokens = framing[role_index(role)];
    for (k, part) in parts.iter().enumerate() {
        if k > 0 {
            content.push_str(SEPARATOR);
        }
        let start = content.len();
        content.push_str(part.text);
        if let Some(id) = &part.id {
            spans.push(start..content.len());
            chunk_ids.extend([id.clone()]);
        }
        tokens += part.counts.in_message(k + 1 < parts.len());
    }
    let counts: SmallVec<[&CountedText; 8]> = parts.iter().map(|p| &*p.counts).collect();
    let growable = growable_prefix(&counts);
    let message = ContextMessage {
        role,
        content: content.into(),
        chunk_ids,
        tokens,
        spans,
    };
    let print = MessageFingerprint::of(&message, growable);
    (message, print)
}

/// The ranges of messages to write again around the `affected` ones: each
/// with its neighbours when they may join it, overlapping and adjacent
/// ranges merged, within the history from `first`.
fn ranges_around(
    affected: &[(usize, bool)],
    first: usize,
    len: usize,
) -> Vec<RangeInclusive<usize>> {
    let mut spans: SmallVec<[(usize, usize); 16]> = (affected.iter())
        .map(|&(m, joins)| match joins {
            true => (m.saturating_sub(1).max(first), (m + 1).min(len - 1)),
            false => (m, m),
        })
        .collect();
    spans.sort_unstable();
    let mut ranges: Vec<RangeInclusive<usize>> = Vec::new();
    for (lo, hi) in spans {
        match ranges.last_mut() {
            Some(last) if lo <= *last.end() + 1 => *last = *last.start()..=hi.max(*last.end()),
            _ => ranges.push(lo..=hi),
        }
    }
    ranges
}

/// What a row's stub saves over its body, which the untrimmed cost adds back.
fn stub_saving(row: &ChunkDecision) -> i64 {
    match row.decision {
        Decision::Stubbed {
            tokens_before,
            tokens_after,
            ..
        } => tokens_before.saturating_sub(tokens_after) as i64,
        _ => 0,
    }
}

/// The row of a chunk `row` showed (whole, capped or stubbed), dropped for
/// the budget, as the plan records it.
fn dropped_row(row: &ChunkDecision) -> ChunkDecision {
    let truncated_from = match row.decision {
        Decision::Truncated { tokens_before, .. } => Some(tokens_before),
        Decision::Stubbed { .. } => row.truncated_from,
        _ => None,
    };
    ChunkDecision {
        tokens: body_tokens(row),
        truncated_from,
        decision: Decision::Dropped {
            reason: DropReason::Budget,
        },
        ..row.clone()
    }
}
