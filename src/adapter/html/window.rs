//! One build's window as HTML: its figures, the window as bars by kind
//! and by decision, what set the cut and what the cache keeps, and every
//! chunk in prompt order with its rendered text a click away.

use std::fmt::Write;

use rustc_hash::FxHashMap;

use super::page::{self, Page, escape, grouped, percent};
use crate::adapter::explain::{
    Segment, decision_text, reason_name, started_from, stub_reason_name,
};
use crate::budget::{ChunkDecision, Decision};
use crate::model::chunk_id::ChunkId;
use crate::model::memory::{MemoryChunk, MemoryState};
use crate::model::roles::Role;
use crate::output::message::ContextMessage;
use crate::output::result::BuildResult;

/// `result` as one self-contained HTML page (see `docs/cli.md`):
/// `state`, the input it was built from, adds each chunk's role, tool and
/// pin, which the result does not keep.
pub fn window_page(result: &BuildResult, state: Option<&MemoryState>) -> String {
    let title = format!(
        "Context window: {} of {} tokens ({})",
        result.token_count, result.budget, result.model
    );
    let mut page = Page::new(title);
    page.body.push_str("<h1>Context window</h1>\n");
    write_window(&mut page.body, result, state);
    page.finish()
}

/// The window's sections, for a page of its own or a replay's last turn.
pub(super) fn write_window(out: &mut String, result: &BuildResult, state: Option<&MemoryState>) {
    let _ = writeln!(
        out,
        "<section class=\"window\" data-token-count=\"{}\" data-budget=\"{}\" \
         data-max-tokens=\"{}\" data-reserve=\"{}\" data-decisions=\"{}\">",
        result.token_count,
        result.budget,
        result.max_tokens,
        result.reserve_output,
        result.decisions.len()
    );
    write_facts(out, result);
    let [by_kind, by_decision] = result.window_bars();
    write_bar(out, result, "By kind", &by_kind);
    write_bar(out, result, "By decision", &by_decision);
    write_notes(out, result);
    write_chunks(out, result, state);
    out.push_str("</section>\n");
}

/// The build's figures: model, encoding, exactness, budget and use.
fn write_facts(out: &mut String, result: &BuildResult) {
    let exact = if result.token_count_exact {
        "exact"
    } else {
        "estimate or bound"
    };
    let free = result.budget.saturating_sub(result.token_count);
    let mut facts = vec![
        ("model", escape(&result.model).into_owned()),
        ("encoding", escape(&result.encoding).into_owned()),
        ("token_count", grouped(result.token_count)),
        ("counted", exact.to_owned()),
        ("budget", grouped(result.budget)),
        ("max_tokens", grouped(result.max_tokens)),
        ("reserve_output", grouped(result.reserve_output)),
        ("free", grouped(free)),
        ("messages", grouped(result.messages.len())),
        ("chunks", grouped(result.decisions.len())),
    ];
    if let Some(target) = result.trim_target {
        facts.push(("trim_target", grouped(target)));
    }
    if let Some(stable) = result.stable_prefix_tokens {
        facts.push(("stable_prefix_tokens", grouped(stable)));
    }
    if result.unread_chunks > 0 {
        facts.push(("unread_chunks", grouped(result.unread_chunks)));
    }
    page::write_facts(out, "", &facts);
}

/// A bar of the window (an SVG of `segments` over `max_tokens`) and its
/// legend with tokens and percentages.
fn write_bar(out: &mut String, result: &BuildResult, title: &str, segments: &[Segment]) {
    let window = result.max_tokens.max(1);
    let _ = writeln!(out, "<h2>{title}</h2>");
    out.push_str(
        "<svg class=\"bar\" viewBox=\"0 0 1000 28\" preserveAspectRatio=\"none\" role=\"img\">\n",
    );
    let mut start = 0usize;
    for &(_, name, tokens) in segments.iter().filter(|s| s.2 > 0) {
        let x = start as f64 * 1000.0 / window as f64;
        let width = tokens as f64 * 1000.0 / window as f64;
        let _ = writeln!(
            out,
            "<rect class=\"k-{}\" x=\"{x:.3}\" y=\"0\" width=\"{width:.3}\" height=\"28\">\
             <title>{name}: {} tokens ({})</title></rect>",
            segment_class(name),
            grouped(tokens),
            percent(tokens, window)
        );
        start += tokens;
    }
    out.push_str("</svg>\n<table class=\"legend\"><tr><th>part</th><th>tokens</th><th>of max_tokens</th></tr>\n");
    for &(_, name, tokens) in segments.iter().filter(|s| s.2 > 0) {
        let _ = writeln!(
            out,
            "<tr data-segment=\"{name}\" data-tokens=\"{tokens}\"><td><span class=\"sw k-{}\"></span>{name}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            segment_class(name),
            grouped(tokens),
            percent(tokens, window)
        );
    }
    out.push_str("</table>\n");
}

/// The CSS class of a bar's segment.
fn segment_class(name: &str) -> &str {
    match name {
        "framing, prompt, markers" => "outside",
        name => name,
    }
}

/// What set the cut, what the cache keeps, the compaction, edits and
/// warnings: one line each.
fn write_notes(out: &mut String, result: &BuildResult) {
    let mut notes: Vec<(&str, String)> = Vec::new();
    notes.extend(result.cut_reason().map(|cut| ("info", cut)));
    let (dropped, tokens) = result.dropped_for_budget();
    if dropped > 0 {
        let text = format!(
            "dropped for the budget: {dropped} chunks, {} tokens",
            grouped(tokens)
        );
        notes.push(("info", text));
    }
    if let Some(cache) = &result.cache {
        let kept = format!(
            "prompt cache: {} tokens of the previous prompt carry over",
            grouped(cache.stable_prefix_tokens)
        );
        notes.push(("ok", kept));
        notes.extend((cache.broke_at.as_ref()).map(|broke| ("warn", broke.describe())));
    }
    notes.extend((result.previous_build).map(|p| ("info", started_from(p).to_owned())));
    if let Some(c) = &result.compaction {
        let text = format!(
            "compaction {:?} covers {:?}: it folds {} chunks, {} tokens",
            c.id, c.covers, c.chunks, c.tokens
        );
        notes.push(("info", text));
    }
    if let Some(due) = result.compaction_due {
        let due = if due { "due" } else { "not due" };
        notes.push(("info", format!("compaction {due}")));
    }
    for edit in &result.applied_edits {
        let edit = serde_json::to_string(edit).unwrap_or_default();
        notes.push(("info", format!("context edit applied: {edit}")));
    }
    notes.extend(
        result
            .warnings
            .iter()
            .map(|w| ("warn", format!("warning: {w}"))),
    );
    if notes.is_empty() {
        return;
    }
    out.push_str("<h2>Notes</h2>\n");
    for (class, text) in notes {
        let _ = writeln!(out, "<p class=\"note {class}\">{}</p>", escape(&text));
    }
}

/// The chunks in prompt order, message by message; the chunks left out
/// sit, folded, where they were in the input.
fn write_chunks(out: &mut String, result: &BuildResult, state: Option<&MemoryState>) {
    let rows = Rows::new(result, state);
    out.push_str("<h2>Chunks, in prompt order</h2>\n<table class=\"chunks\">");
    out.push_str(COLUMNS);
    out.push_str(
        "<tr><th>#</th><th>id</th><th>kind</th><th>role / tool</th><th>tokens</th>\
         <th>priority</th><th>decision</th><th>reason</th><th>before → after</th>\
         <th>protected</th><th>pinned</th><th>text</th></tr>\n",
    );
    let mut left_out = LeftOut::default();
    for (index, message) in result.messages.iter().enumerate() {
        let system = message.role == Role::System;
        let position = |id: &ChunkId| rows.position.get(id.as_str()).copied();
        // What was left out before the message's first chunk goes before it.
        if let Some(first) = message.chunk_ids.first().and_then(position)
            && !system
        {
            left_out.write_before(out, &rows, first);
        }
        write_message_row(out, index, message);
        for (id, text) in message.chunk_texts() {
            let Some(at) = position(id) else {
                continue;
            };
            if !system {
                left_out.write_before(out, &rows, at);
            }
            rows.write(out, at, Some(message.role), Some(text));
        }
    }
    left_out.write_before(out, &rows, usize::MAX);
    out.push_str("</table>\n");
}

/// The chunk table's columns, which the tables of chunks left out share
/// so that their cells line up under the headers (widths in the style).
const COLUMNS: &str =
    "<colgroup><col><col><col><col><col><col><col><col><col><col><col><col></colgroup>\n";

/// A message's header row: its place, role and tokens, and the text it
/// holds outside its chunks (the system prompt, fragments, markers).
fn write_message_row(out: &mut String, index: usize, message: &ContextMessage) {
    let _ = write!(
        out,
        "<tr class=m data-message={index}><td colspan=12>message {index} · {} · {} tokens",
        message.role.as_str(),
        grouped(message.tokens)
    );
    let mut outside = String::new();
    let mut at = 0;
    for span in &message.spans {
        outside.push_str(message.content[at..span.start].trim());
        at = span.end;
    }
    outside.push_str(message.content[at..].trim());
    if !outside.is_empty() {
        let _ = write!(
            out,
            " <details class=\"text\"><summary>text outside chunks</summary><pre>{}</pre></details>",
            escape(&outside)
        );
    }
    out.push_str("</td></tr>\n");
}

/// The chunks of a build by input position, with what the input says of
/// them.
struct Rows<'r> {
    decisions: &'r crate::Rows<ChunkDecision>,
    position: FxHashMap<&'r str, usize>,
    chunks: FxHashMap<&'r str, &'r MemoryChunk>,
    /// The most bytes of one chunk's text the page shows, if it cannot
    /// show them all.
    text_cap: Option<usize>,
}

impl<'r> Rows<'r> {
    fn new(result: &'r BuildResult, state: Option<&'r MemoryState>) -> Self {
        let position = (result.decisions.iter().enumerate())
            .map(|(i, d)| (d.id.as_str(), i))
            .collect();
        let chunks = (state.map(|s| &s.chunks[..]).unwrap_or_default().iter())
            .map(|c| (c.id.as_str(), c))
            .collect();
        Rows {
            decisions: &result.decisions,
            position,
            chunks,
            text_cap: text_cap(result),
        }
    }

    /// The row of the chunk at `position`, in a message of `role` with
    /// `text` when it is in the prompt.
    fn write(&self, out: &mut String, position: usize, role: Option<Role>, text: Option<&str>) {
        let d = &self.decisions[position];
        let chunk = self.chunks.get(d.id.as_str());
        let role = chunk
            .and_then(|c| c.role)
            .or(role)
            .map_or("", |r| r.as_str());
        let tool = chunk.and_then(|c| c.tool.as_deref()).unwrap_or("");
        let speaker = match (role, tool) {
            ("", tool) | (tool, "") => escape(tool).into_owned(),
            (role, tool) => format!("{role} / {}", escape(tool)),
        };
        let (decision, reason, change) = decision_cells(d);
        let class = if d.is_included() {
            ""
        } else {
            " class=\"dropped\""
        };
        let _ = write!(
            out,
            "<tr{class} data-chunk=\"{id}\" data-decision=\"{decision}\" data-tokens=\"{}\">\
             <td>{position}<td>{id}<td>{kind}<td>{speaker}<td>{}<td>{}<td>{decision}\
             <td>{}<td>{change}<td>{}<td>{}<td>",
            d.tokens,
            grouped(d.tokens),
            d.priority,
            escape(&reason),
            if d.protected { "yes" } else { "" },
            match chunk {
                Some(c) if c.pinned => "yes",
                Some(_) => "",
                None => "?",
            },
            id = escape(&d.id),
            kind = d.kind.as_str(),
        );
        if let Some(text) = text {
            let (head, tail) = shown(text, self.text_cap);
            let _ = write!(
                out,
                "<details><summary>{} bytes</summary><pre>{}",
                grouped(text.len()),
                escape(head)
            );
            if let Some(tail) = tail {
                let hidden = text.len() - head.len() - tail.len();
                let _ = write!(
                    out,
                    "</pre><p class=cut>[{} bytes not shown]</p><pre>{}",
                    grouped(hidden),
                    escape(tail)
                );
            }
            out.push_str("</pre></details>");
        }
        out.push_str("</tr>\n");
    }
}

/// The bytes a page aims to stay under, and what its rows take besides
/// the texts: a row per chunk, a header per message (measured by
/// `benches/html.rs`: 368 bytes a chunk for both).
const PAGE_BYTES: usize = 4_600_000;
const ROW_BYTES: usize = 300;
const MESSAGE_BYTES: usize = 70;
/// The texts keep at least this much of the page, however many rows.
const MIN_TEXT_BYTES: usize = 500_000;

/// The most bytes of each chunk's text that keep the page under
/// [`PAGE_BYTES`]: shorter texts shown whole, the longer ones cut to one
/// level. `None` when every text fits whole (a window of a few hundred
/// thousand tokens).
fn text_cap(result: &BuildResult) -> Option<usize> {
    let rows = result.decisions.len() * ROW_BYTES + result.messages.len() * MESSAGE_BYTES;
    // Escaping makes a text longer: chunk tags are mostly quotes and brackets.
    let budget = (PAGE_BYTES.saturating_sub(rows) / 4 * 3).max(MIN_TEXT_BYTES);
    let mut lengths: Vec<usize> = (result.messages.iter())
        .flat_map(|m| m.spans.iter().map(|span| span.len()))
        .collect();
    if lengths.iter().sum::<usize>() <= budget {
        return None;
    }
    // The level at which the texts, each cut to it, fill the budget.
    lengths.sort_unstable();
    let mut left = budget;
    for (i, &len) in lengths.iter().enumerate() {
        let level = left / (lengths.len() - i);
        if len > level {
            return Some(level.max(1));
        }
        left -= len;
    }
    None
}

/// `text` as the page shows it: whole, or its head and tail within `cap`
/// bytes (cut at character boundaries).
fn shown(text: &str, cap: Option<usize>) -> (&str, Option<&str>) {
    match cap {
        Some(cap) if text.len() > cap => {
            let head = text.floor_char_boundary(cap * 2 / 3);
            let tail = text.ceil_char_boundary(text.len() - (cap - head));
            (&text[..head], Some(&text[tail..]))
        }
        _ => (text, None),
    }
}

/// The decision, its reason and its tokens before and after, as cells.
fn decision_cells(d: &ChunkDecision) -> (&'static str, String, String) {
    let change = |before: usize, after: usize| format!("{} → {}", grouped(before), grouped(after));
    match d.decision {
        Decision::Kept => ("kept", String::new(), String::new()),
        Decision::Truncated {
            tokens_before,
            tokens_after,
            cap,
        } => (
            "truncated",
            format!("cap {cap}"),
            change(tokens_before, tokens_after),
        ),
        Decision::Stubbed {
            tokens_before,
            tokens_after,
            reason,
        } => {
            let why = stub_reason_name(reason);
            (
                "stubbed",
                decision_reason(d, why),
                change(tokens_before, tokens_after),
            )
        }
        Decision::Dropped { reason } => ("dropped", reason_name(reason).to_owned(), String::new()),
    }
}

/// `why`, and the cap's cut first when the chunk had one.
fn decision_reason(d: &ChunkDecision, why: &str) -> String {
    match d.truncated_from {
        Some(_) => format!("{why}; {}", decision_text(d)),
        None => why.to_owned(),
    }
}

/// The chunks left out so far, written in runs where they sat.
#[derive(Default)]
struct LeftOut {
    /// The first input position not yet looked at.
    next: usize,
}

impl LeftOut {
    /// Writes the chunks left out before input position `before`, one
    /// folded group per run of one reason.
    fn write_before(&mut self, out: &mut String, rows: &Rows<'_>, before: usize) {
        let end = before.min(rows.decisions.len());
        let mut run: Vec<usize> = Vec::new();
        for position in self.next..end {
            let d = &rows.decisions[position];
            if d.is_included() {
                continue;
            }
            if run
                .last()
                .is_some_and(|&last| reason_name_of(&rows.decisions[last]) != reason_name_of(d))
            {
                write_run(out, rows, &std::mem::take(&mut run));
            }
            run.push(position);
        }
        write_run(out, rows, &run);
        self.next = self.next.max(end);
    }
}

/// Why `d`'s chunk was left out.
fn reason_name_of(d: &ChunkDecision) -> &'static str {
    match d.decision {
        Decision::Dropped { reason } => reason_name(reason),
        _ => "",
    }
}

/// One run of chunks left out for one reason, folded under a summary.
fn write_run(out: &mut String, rows: &Rows<'_>, run: &[usize]) {
    let Some(&first) = run.first() else {
        return;
    };
    let tokens: usize = run.iter().map(|&p| rows.decisions[p].tokens).sum();
    let reason = reason_name_of(&rows.decisions[first]);
    let why = match reason {
        "budget" => "elided history: dropped for the budget",
        "compacted" => "folded by the compaction in effect",
        "orphan" => "orphaned tool results",
        "filtered" => "filtered out",
        other => other,
    };
    let _ = writeln!(
        out,
        "<tr class=\"gone\" data-left-out=\"{reason}\"><td colspan=\"12\"><details class=\"gone\">\
         <summary>{why}: {} chunks, {} tokens</summary><table>{COLUMNS}",
        run.len(),
        grouped(tokens)
    );
    for &position in run {
        rows.write(out, position, None, None);
    }
    out.push_str("</table></details></td></tr>\n");
}
