//! A human-readable breakdown of a build, for `--explain`.

use std::borrow::Cow;
use std::fmt::Write;

use crate::budget::{ChunkDecision, Decision, DropReason, StubReason};
use crate::model::roles::ChunkKind;
use crate::output::result::{BuildResult, PreviousBuild};
use crate::render::Protocol;

const BAR_WIDTH: usize = 60;

/// What a stored chat's build started from, as a line.
pub(crate) fn started_from(previous: PreviousBuild) -> &'static str {
    match previous {
        PreviousBuild::Extended => "extended the branch's last build",
        PreviousBuild::NoneKept => "started cold: no build of the branch is kept",
        PreviousBuild::OtherSettings => {
            "started cold: the branch's last build was made under other settings"
        }
        PreviousBuild::HeadMoved => {
            "started cold: the branch's head does not descend from its last build's"
        }
        PreviousBuild::Unreadable => {
            "started cold: the kept record of the last build does not read"
        }
        PreviousBuild::NotKept => "started cold: builds with a caller's counter are not kept",
    }
}

impl BuildResult {
    /// Each chunk's kind, tokens, priority and decision, what set the cut,
    /// then bars of the window by kind and by decision.
    pub fn explain(&self) -> String {
        let mut out = String::new();
        let exact = match (self.token_count_exact, self.protocol) {
            (true, _) => "exact",
            (false, Protocol::Native) => "a bound: native records",
            (false, _) => "estimate",
        };
        let _ = writeln!(
            out,
            "{}: {} of {} tokens ({exact}, {}); max_tokens {}, reserve {}",
            self.model,
            self.token_count,
            self.budget,
            self.encoding,
            self.max_tokens,
            self.reserve_output
        );
        self.write_decisions(&mut out);
        if let Some(elided) = self.elided {
            let marker = if elided.marker {
                ""
            } else {
                " (no room for the marker)"
            };
            let _ = writeln!(
                out,
                "  elided {} chunks, {} tokens{marker}",
                elided.chunks, elided.tokens
            );
        }
        if let Some(cut) = self.cut_reason() {
            let _ = writeln!(out, "  {cut}");
        }
        if let Some(stable) = self.stable_prefix_tokens {
            let _ = writeln!(
                out,
                "  stable prefix: {stable} tokens identical to the previous build"
            );
        }
        if let Some(broke) = self
            .cache
            .as_ref()
            .and_then(|cache| cache.broke_at.as_ref())
        {
            let _ = writeln!(out, "  cache: {}", broke.describe());
        }
        if let Some(previous) = self.previous_build {
            let _ = writeln!(out, "  {}", started_from(previous));
        }
        if let Some(compaction) = &self.compaction {
            let _ = writeln!(
                out,
                "  compaction {:?} covers {:?}: it folds {} chunks, {} tokens",
                compaction.id, compaction.covers, compaction.chunks, compaction.tokens
            );
        }
        if let Some(due) = self.compaction_due {
            let (due, than) = if due {
                ("due", "more")
            } else {
                ("not due", "no more")
            };
            let _ = writeln!(
                out,
                "  compaction {due}: the history before trimming costs {} tokens, {than} than \
                 the trigger",
                self.untrimmed_tokens()
            );
        }
        for warning in &self.warnings {
            let _ = writeln!(out, "  warning: {warning}");
        }
        self.write_bars(&mut out);
        out
    }

    /// The table of decisions, its columns as wide as their widest entry.
    /// Widths count characters, so ids of wide characters (CJK, most emoji,
    /// which a terminal shows two cells wide) push their row's later columns
    /// right; the id column itself never truncates or merges.
    fn write_decisions(&self, out: &mut String) {
        let ids: Vec<Cow<'_, str>> = self.decisions.iter().map(|d| shown_id(&d.id)).collect();
        let id_width = column_width("id", ids.iter().map(|id| id.chars().count()));
        let kind_width = column_width("kind", ChunkKind::ALL.iter().map(|k| k.as_str().len()));
        let tokens_width = column_width("tokens", self.decisions.iter().map(|d| digits(d.tokens)));
        let priority_width = column_width(
            "priority",
            self.decisions.iter().map(|d| d.priority.to_string().len()),
        );
        let _ = writeln!(
            out,
            "  {:<id_width$}  {:<kind_width$}  {:>tokens_width$}  {:>priority_width$}  decision",
            "id", "kind", "tokens", "priority"
        );
        for (d, id) in self.decisions.iter().zip(&ids) {
            let _ = writeln!(
                out,
                "  {id:<id_width$}  {:<kind_width$}  {:>tokens_width$}  {:>priority_width$}  {}",
                d.kind.as_str(),
                d.tokens,
                d.priority,
                decision_text(d)
            );
        }
    }

    /// What set the cut, when this build left anything out for the budget:
    /// the low-water mark (trimming below the budget so that the next turns
    /// fit without a new cut, which keeps the prompt's prefix cached), the
    /// budget itself, or the previous build.
    pub(crate) fn cut_reason(&self) -> Option<String> {
        // Only the budget's cuts: what a `context_management` edit
        // cleared is no cut kept from a previous build.
        let trimmed = self.decisions.iter().any(|d| {
            matches!(
                d.decision,
                Decision::Stubbed {
                    reason: StubReason::Budget,
                    ..
                } | Decision::Dropped {
                    reason: DropReason::Budget
                }
            )
        });
        match self.trim_target {
            Some(target) if target < self.budget => {
                let percent = target as f64 * 100.0 / self.budget.max(1) as f64;
                Some(format!(
                    "trimmed to {percent:.0}% for cache stability: at most {target} of {} \
                     tokens (the low-water mark), not the budget",
                    self.budget
                ))
            }
            Some(_) => Some(format!(
                "trimmed to fit the budget: at most {} tokens",
                self.budget
            )),
            None if trimmed => Some("kept the previous build's cut for cache stability".into()),
            None => None,
        }
    }

    /// The bars by kind and by decision, then what the budget dropped.
    fn write_bars(&self, out: &mut String) {
        let [by_kind, by_decision] = self.window_bars();
        self.write_bar(out, "by kind", &by_kind);
        self.write_bar(out, "by decision", &by_decision);
        let (chunks, tokens) = self.dropped_for_budget();
        if chunks > 0 {
            let _ = writeln!(
                out,
                "  dropped for the budget: {chunks} chunks, {tokens} tokens"
            );
        }
    }

    /// The window by kind and by decision: the chunks in the prompt, then
    /// framing and markers, free space and the reserve, adding up to
    /// `max_tokens` (the `--explain` bars and the HTML page's).
    pub(crate) fn window_bars(&self) -> [Vec<Segment>; 2] {
        let in_prompt = || self.decisions.iter().filter(|d| d.is_included());
        let by_kind = ChunkKind::ALL.map(|kind| {
            let of_kind = in_prompt().filter(|d| d.kind == kind);
            (
                kind_letter(kind),
                kind.as_str(),
                of_kind.map(|d| d.tokens).sum(),
            )
        });
        let mut by_decision = [('K', "kept", 0), ('T', "truncated", 0), ('S', "stubbed", 0)];
        for d in in_prompt() {
            let slot = match d.decision {
                Decision::Truncated { .. } => 1,
                Decision::Stubbed { .. } => 2,
                _ => 0,
            };
            by_decision[slot].2 += d.tokens;
        }
        [by_kind.to_vec(), by_decision.to_vec()].map(|mut segments| {
            let content: usize = segments.iter().map(|s| s.2).sum();
            let outside = self.token_count.saturating_sub(content);
            segments.push(('+', "framing, prompt, markers", outside));
            segments.push(('.', "free", self.budget.saturating_sub(self.token_count)));
            segments.push(('|', "reserve", self.reserve_output));
            segments
        })
    }

    /// How many chunks the budget dropped, and their tokens.
    pub(crate) fn dropped_for_budget(&self) -> (usize, usize) {
        let dropped = self.decisions.iter().filter(|d| {
            matches!(
                d.decision,
                Decision::Dropped {
                    reason: DropReason::Budget
                }
            )
        });
        dropped.fold((0, 0), |(chunks, tokens), d| {
            (chunks + 1, tokens + d.tokens)
        })
    }

    /// A bar of the window: one letter per slice of `segments`, then a
    /// line for each that is not empty.
    fn write_bar(&self, out: &mut String, title: &str, segments: &[Segment]) {
        let window = self.max_tokens.max(1);
        let mut bar = String::with_capacity(BAR_WIDTH);
        let (mut drawn, mut cumulative) = (0, 0u128);
        for &(letter, _, tokens) in segments {
            cumulative += tokens as u128;
            // In u128: a budget near usize::MAX times the width must not overflow.
            let upto = (cumulative * BAR_WIDTH as u128)
                .div_ceil(window as u128)
                .min(BAR_WIDTH as u128) as usize;
            for _ in drawn..upto {
                bar.push(letter);
            }
            drawn = drawn.max(upto);
        }
        let _ = writeln!(out, "window {title:<11} [{bar}]");
        for &(letter, name, tokens) in segments.iter().filter(|s| s.2 > 0) {
            let percent = tokens as f64 * 100.0 / window as f64;
            let _ = writeln!(
                out,
                "  {letter} {name:<26} {tokens:>8} tokens {percent:>5.1}%"
            );
        }
    }
}

/// A slice of a window bar: its letter, its name and its tokens.
pub(crate) type Segment = (char, &'static str, usize);

fn kind_letter(kind: ChunkKind) -> char {
    match kind {
        ChunkKind::System => 'S',
        ChunkKind::Agent => 'A',
        ChunkKind::Workflow => 'W',
        ChunkKind::Delegation => 'D',
        ChunkKind::Environment => 'E',
        ChunkKind::Thinking => 'T',
        ChunkKind::Output => 'O',
        ChunkKind::Compaction => 'C',
    }
}

pub(crate) fn reason_name(reason: DropReason) -> &'static str {
    match reason {
        DropReason::Filtered => "filtered",
        DropReason::Orphan => "orphan",
        DropReason::Compacted => "compacted",
        DropReason::Budget => "budget",
        DropReason::ClearThinking => "clear_thinking_20251015",
    }
}

/// Why a chunk was stubbed, in a word: `disposable` (the budget) or the
/// edit that cleared it.
pub(crate) fn stub_reason_name(reason: StubReason) -> &'static str {
    match reason {
        StubReason::ClearToolUses => "clear_tool_uses_20250919",
        StubReason::Budget => "disposable",
    }
}

/// What happened to a chunk, in words: a chunk its cap cut and the budget
/// then stubbed or dropped says both.
pub(crate) fn decision_text(d: &ChunkDecision) -> String {
    let protected = if d.protected { ", protected" } else { "" };
    let what = match d.decision {
        Decision::Kept => format!("kept{protected}"),
        Decision::Truncated {
            tokens_before,
            tokens_after,
            cap,
        } => format!("truncated {tokens_before} -> {tokens_after} (cap {cap}){protected}"),
        Decision::Stubbed {
            tokens_before,
            tokens_after,
            reason,
        } => format!(
            "stubbed {tokens_before} -> {tokens_after} ({})",
            stub_reason_name(reason)
        ),
        Decision::Dropped { reason } => format!("dropped ({})", reason_name(reason)),
    };
    match (d.truncated_from, d.decision) {
        (Some(before), Decision::Stubbed { tokens_before, .. }) => {
            format!("truncated {before} -> {tokens_before}, then {what}")
        }
        (Some(before), _) => format!("truncated {before} -> {}, then {what}", d.tokens),
        (None, _) => what,
    }
}

/// An id as the table shows it: control characters escaped, so that a line
/// break in an id cannot break the table.
fn shown_id(id: &str) -> Cow<'_, str> {
    if id.chars().any(char::is_control) {
        Cow::Owned(id.escape_debug().to_string())
    } else {
        Cow::Borrowed(id)
    }
}

/// The width of a column: its widest cell, or its header.
fn column_width(header: &str, cells: impl Iterator<Item = usize>) -> usize {
    cells.fold(header.len(), usize::max)
}

fn digits(n: usize) -> usize {
    n.checked_ilog10().map_or(1, |log| log as usize + 1)
}

#[cfg(test)]
mod tests {
    use crate::budget::{ChunkDecision, Decision, StubReason};
    use crate::model::roles::ChunkKind;

    #[test]
    fn a_stubbed_chunk_cut_first_says_both() {
        let mut decision = ChunkDecision {
            id: "r1".into(),
            kind: ChunkKind::Environment,
            tokens: 30,
            priority: 40,
            protected: false,
            decision: Decision::Stubbed {
                tokens_before: 8214,
                tokens_after: 30,
                reason: StubReason::Budget,
            },
            truncated_from: Some(23022),
        };
        assert_eq!(
            super::decision_text(&decision),
            "truncated 23022 -> 8214, then stubbed 8214 -> 30 (disposable)"
        );
        decision.truncated_from = None;
        assert_eq!(
            super::decision_text(&decision),
            "stubbed 8214 -> 30 (disposable)"
        );
    }
}
