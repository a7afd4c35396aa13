//! The assemble stage, from a plan to messages: the summary that may
//! replace the marker, each chunk's fate recorded, and the messages
//! themselves with what a later build can keep of each.

use std::panic::{AssertUnwindSafe, catch_unwind};

use smallvec::SmallVec;

use super::ready::Preparer;
use super::{Assembled, Build, Planned, Prepared};
use crate::budget::{
    ChunkDecision, Decision, DropReason, Fate, Item, Layout, MIN_BODY_CAP, Planner, SUMMARY_TAG,
    Slot, StubReason, Summarizer, truncate_to_cap,
};
use crate::error::Result;
use crate::model::chunk_id::{ChunkId, ChunkIds};
use crate::model::memory::{MemoryChunk, MemoryState};
use crate::model::roles::Role;
use crate::output::message::{ChunkSpans, ContextMessage, Summary};
use crate::render::history_note;
use crate::tokens::parts::{CountedText, SEPARATOR, join};

/// Replaces the elision marker by a summary when the policy has a
/// summarizer and the summary fits where the marker was.
///
/// A summary sits near the start of the prompt, so it must change only when
/// the cut does: while the cut is the previous build's, the previous summary
/// is reused without asking the summarizer again. A new summary gets at most
/// half the room the low-water mark left, so the turns after a trim still
/// have room to append.
///
/// A summary cannot make things worse: the summarizer reads at most the
/// policy's `summary_input_tokens` of the newest dropped chunks; a summary
/// that costs as much as the chunks it stands for, a summarizer that
/// panics, or a slice it cannot be given leaves the plain marker, and
/// `warnings` says why.
pub(crate) fn summarize(
    planner: &Planner<'_>,
    layout: &mut Layout,
    (state, preparer): (&MemoryState, &Preparer<'_>),
    previous: Option<&Summary>,
    warnings: &mut Vec<String>,
) -> Option<Summary> {
    let (Some(summarizer), Some(elision), Some(marker)) = (
        preparer.policy.summarizer(),
        layout.elision,
        layout.marker.as_ref(),
    ) else {
        return None;
    };
    let chunks = elision.chunks.to_string();
    let tokens = elision.tokens.to_string();
    let attributes = [
        ("chunks", Some(chunks.as_str())),
        ("tokens", Some(tokens.as_str())),
    ];
    let render = |body: &str| {
        let mut text = String::new();
        preparer
            .ctx
            .write_element(&mut text, SUMMARY_TAG, &attributes, Some(body));
        CountedText::new(history_note(planner.protocol, text), planner.counter)
    };
    let same_cut = |s: &&Summary| s.chunks == elision.chunks && s.tokens == elision.tokens;
    let mut body = match previous.filter(same_cut) {
        Some(summary) => summary.body.clone(),
        None => {
            let frame = render("x").alone();
            let room = summary_room(planner, layout, (marker.alone(), frame))?;
            let limit = preparer.policy.summary_input_tokens;
            ask(
                summarizer,
                (planner, layout, state),
                (room, limit),
                warnings,
            )?
        }
    };
    // Escaping and joins can cost a few tokens more than the text alone:
    // shorten until the whole prompt fits, or keep the marker.
    for _ in 0..4 {
        let mut candidate = layout.clone();
        let rendered = render(&body);
        let summary_tokens = rendered.alone();
        planner.replace_marker(&mut candidate, rendered);
        if candidate.total <= planner.available && summary_tokens >= elision.tokens {
            warnings.push(format!(
                "the summary ({summary_tokens} tokens) was discarded: it is no smaller than the \
                 {} tokens of history it stands for; the elided history is marked instead",
                elision.tokens
            ));
            return None;
        }
        if candidate.total <= planner.available {
            if let Some(elision) = candidate.elision.as_mut() {
                elision.marker = false;
                elision.summary = true;
            }
            *layout = candidate;
            return Some(Summary {
                chunks: elision.chunks,
                tokens: elision.tokens,
                body,
            });
        }
        let excess = candidate.total - planner.available;
        let cap = planner.counter.count(&body).saturating_sub(excess + 1);
        match truncate_to_cap(planner.counter, &body, cap) {
            Some(cut) if cap >= MIN_BODY_CAP => body = cut.text,
            _ => return None,
        }
    }
    None
}

/// The room for a new summary's text in `layout`, whose marker costs
/// `marker` tokens and the summary's frame `frame`: what the budget
/// leaves, and at most half the headroom the low-water mark keeps (so the
/// turns after a trim still have room to append). `None` below the
/// smallest body.
fn summary_room(
    planner: &Planner<'_>,
    layout: &Layout,
    (marker, frame): (usize, usize),
) -> Option<usize> {
    let free = (planner.available + marker).saturating_sub(layout.total + frame);
    let headroom = planner.available - (planner.available as f64 * planner.low_water) as usize;
    Some(free.min((headroom / 2).max(MIN_BODY_CAP))).filter(|&room| room >= MIN_BODY_CAP)
}

/// A new summary from `summarizer`, of at most `room` tokens, of the
/// newest dropped chunks whose rendered tokens sum to at most `limit`.
/// `None` (and a warning) when even the newest dropped chunk costs more,
/// or the summarizer panics; `None` when it declines.
fn ask(
    summarizer: &dyn Summarizer,
    (planner, layout, state): (&Planner<'_>, &Layout, &MemoryState),
    (room, limit): (usize, usize),
    warnings: &mut Vec<String>,
) -> Option<String> {
    let dropped: Vec<(&MemoryChunk, usize)> = planner
        .items
        .iter()
        .zip(&layout.fates)
        .filter(|(_, fate)| **fate == Fate::Dropped)
        .map(|(item, _)| (&state.chunks[item.chunk], item.part.alone()))
        .collect();
    let (mut start, mut tokens) = (dropped.len(), 0);
    while start > 0 && tokens + dropped[start - 1].1 <= limit {
        start -= 1;
        tokens += dropped[start].1;
    }
    if start == dropped.len() {
        warnings.push(format!(
            "the summarizer was not asked: the newest dropped chunk costs {} tokens, more than \
             summary_input_tokens ({limit}); the elided history is marked instead",
            dropped.last().map_or(0, |(_, t)| *t)
        ));
        return None;
    }
    let slice: Vec<&MemoryChunk> = dropped[start..].iter().map(|(c, _)| *c).collect();
    match catch_unwind(AssertUnwindSafe(|| summarizer.summarize(&slice, room))) {
        Ok(summary) => summary.filter(|s| !s.is_empty()),
        Err(panic) => {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            warnings.push(format!(
                "the summarizer panicked ({message}); the elided history is marked instead"
            ));
            None
        }
    }
}

/// The messages of a build, system message first.
pub(crate) struct Assembly {
    pub(crate) messages: Vec<ContextMessage>,
    /// Per message, the content tokens that stay put if a later build
    /// appends to it (see `LastBuild::stable_prefix_tokens`).
    pub(crate) growable: Vec<usize>,
    /// The counts of the last message's last part, without its text: a
    /// session extends that message by them.
    pub(crate) last_part: Option<CountedText>,
}

/// Turns a layout into messages.
pub(crate) fn assemble(
    planner: &Planner<'_>,
    layout: &Layout,
    system_chunks: &[usize],
    id_of: impl Fn(usize) -> ChunkId,
) -> Assembly {
    let mut messages = Vec::with_capacity(layout.messages.len() + 1);
    let mut growable = Vec::with_capacity(layout.messages.len() + 1);
    let mut last_part = None;
    let mut push = |role: Role, parts: &[&CountedText], chunk_ids: ChunkIds, spans| {
        growable.push(growable_prefix(parts));
        last_part = parts.last().map(|part| part.released());
        messages.push(ContextMessage {
            role,
            content: join(parts).into(),
            chunk_ids,
            tokens: planner.message_tokens(role, parts),
            spans,
        });
    };
    if !planner.system.is_empty() {
        let parts: Vec<&CountedText> = planner.system.iter().map(|p| &**p).collect();
        // The system prompt and fragments come first, then the chunks.
        let first_chunk = parts.len() - system_chunks.len();
        let spans = spans_of(&parts, |k| k >= first_chunk);
        let ids = system_chunks.iter().map(|&i| id_of(i)).collect();
        push(Role::System, &parts, ids, spans);
    }
    for (role, slots) in &layout.messages {
        let parts: SmallVec<[&CountedText; 8]> =
            slots.iter().map(|s| planner.part(layout, *s)).collect();
        let chunk_ids = slots
            .iter()
            .filter_map(|slot| match slot {
                Slot::Item(i) => Some(id_of(planner.items[*i].chunk)),
                Slot::Marker | Slot::HistoryStart => None,
            })
            .collect();
        let spans = spans_of(&parts, |k| matches!(slots[k], Slot::Item(_)));
        push(*role, &parts, chunk_ids, spans);
    }
    Assembly {
        messages,
        growable,
        last_part,
    }
}

/// Where the parts for which `is_chunk` holds sit in the parts' text
/// joined by [`SEPARATOR`].
fn spans_of(parts: &[&CountedText], is_chunk: impl Fn(usize) -> bool) -> ChunkSpans {
    let mut start = 0;
    let mut spans = ChunkSpans::new();
    for (k, part) in parts.iter().enumerate() {
        let end = start + part.text.len();
        if is_chunk(k) {
            spans.push(start..end);
        }
        start = end + SEPARATOR.len();
    }
    spans
}

/// Content tokens of a message that a later build leaves in place when it
/// appends parts to it: every part but the last with its separator, and the
/// last one up to its final cut. Zero when the parts do not add up.
pub(super) fn growable_prefix(parts: &[&CountedText]) -> usize {
    let Some((last, rest)) = parts.split_last() else {
        return 0;
    };
    if parts.iter().skip(1).any(|p| !p.clean_start) {
        return 0;
    }
    rest.iter().map(|p| p.joined()).sum::<usize>() + last.head()
}

impl<'a> Build<'a> {
    /// Settles the texts the prompt shows, records each chunk's fate and
    /// assembles the messages.
    ///
    /// # Errors
    ///
    /// As [`Preparer::prepare`], for a chunk rendered again.
    pub(super) fn assemble(&mut self, planned: Planned<'a>) -> Result<Assembled> {
        let Planned {
            prepared,
            layout,
            summary,
            warnings,
        } = planned;
        let Prepared {
            mut history,
            ladder,
            system,
            edited,
        } = prepared;
        // The prompt holds the text of what was kept or stubbed, and only that.
        self.settle_texts(&mut history.items, |i| Some(layout.fates[i]))?;
        let mut decisions = history.decisions;
        record_fates(&mut decisions, &history.items, &layout);
        for &i in &edited.cleared {
            if let Decision::Stubbed { reason, .. } =
                &mut decisions[history.items[i].chunk].decision
            {
                *reason = StubReason::ClearToolUses;
            }
        }
        let base = self.planner(&system, &ladder, history.frozen);
        let planner = Planner {
            items: &history.items,
            ..self.outside_planned_by(base, &history.items)
        };
        let assembly = assemble(&planner, &layout, &history.system_chunks, |chunk| {
            decisions[chunk].id.clone()
        });
        // The planning state of a long session is as large as the report:
        // let it go before the report is made.
        let (total, elision, trim_target) = (layout.total, layout.elision, layout.trim_target);
        drop(planner);
        drop((layout, ladder, history.items, system));
        Ok(Assembled {
            assembly,
            decisions,
            total,
            elision,
            trim_target,
            summary,
            applied_edits: edited.applied,
            warnings,
        })
    }
}

/// Records in each chunk's decision what the plan made of its item.
fn record_fates(decisions: &mut [ChunkDecision], items: &[Item], layout: &Layout) {
    for (i, item) in items.iter().enumerate() {
        record_fate(&mut decisions[item.chunk], item, layout, i);
    }
}

/// Records in `decision` (as prepared: kept whole or truncated) what the
/// plan made of `item`, the `i`-th: kept, stubbed or dropped, with its
/// protection and priority.
pub(super) fn record_fate(decision: &mut ChunkDecision, item: &Item, layout: &Layout, i: usize) {
    decision.protected = item.protected;
    decision.priority = item.priority;
    if let Decision::Truncated { tokens_before, .. } = decision.decision {
        decision.truncated_from = Some(tokens_before);
    }
    if layout.fates[i] == Fate::Dropped {
        decision.decision = Decision::Dropped {
            reason: DropReason::Budget,
        };
    } else if let (Fate::Stubbed, Some(stub)) = (layout.fates[i], &item.stub) {
        decision.decision = Decision::Stubbed {
            tokens_before: item.part.alone(),
            tokens_after: stub.alone(),
            reason: StubReason::Budget,
        };
        decision.tokens = stub.alone();
    } else {
        decision.truncated_from = None;
    }
}
