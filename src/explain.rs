//! A human-readable breakdown of a build, for `--explain`.

use std::borrow::Cow;
use std::fmt::Write;

use crate::budget::{ChunkDecision, Decision, DropReason, StubReason};
use crate::build_result::BuildResult;
use crate::render::Protocol;
use crate::roles::ChunkKind;

const BAR_WIDTH: usize = 60;

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
    fn cut_reason(&self) -> Option<String> {
        let trimmed = self.decisions.iter().any(|d| {
            matches!(
                d.decision,
                Decision::Stubbed { .. }
                    | Decision::Dropped {
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
        let in_prompt = |d: &&ChunkDecision| d.is_included();
        let mut by_kind = Vec::new();
        for kind in ChunkKind::ALL {
            let tokens = self
                .decisions
                .iter()
                .filter(in_prompt)
                .filter(|d| d.kind == kind)
                .map(|d| d.tokens)
                .sum();
            by_kind.push((kind_letter(kind), kind.as_str(), tokens));
        }
        self.write_bar(out, "by kind", by_kind);
        let mut by_decision = vec![('K', "kept", 0), ('T', "truncated", 0), ('S', "stubbed", 0)];
        for d in self.decisions.iter().filter(in_prompt) {
            let slot = match d.decision {
                Decision::Truncated { .. } => 1,
                Decision::Stubbed { .. } => 2,
                _ => 0,
            };
            by_decision[slot].2 += d.tokens;
        }
        self.write_bar(out, "by decision", by_decision);
        let dropped: Vec<_> = self
            .decisions
            .iter()
            .filter(|d| {
                matches!(
                    d.decision,
                    Decision::Dropped {
                        reason: DropReason::Budget
                    }
                )
            })
            .collect();
        if !dropped.is_empty() {
            let tokens: usize = dropped.iter().map(|d| d.tokens).sum();
            let _ = writeln!(
                out,
                "  dropped for the budget: {} chunks, {tokens} tokens",
                dropped.len()
            );
        }
    }

    /// A bar of the window: `segments` (content), then framing and markers,
    /// free space and the reserve; one letter per slice.
    fn write_bar(&self, out: &mut String, title: &str, mut segments: Vec<(char, &str, usize)>) {
        let content: usize = segments.iter().map(|s| s.2).sum();
        segments.push((
            '+',
            "framing, prompt, markers",
            self.token_count.saturating_sub(content),
        ));
        segments.push(('.', "free", self.budget.saturating_sub(self.token_count)));
        segments.push(('|', "reserve", self.reserve_output));
        let window = self.max_tokens.max(1);
        let mut bar = String::with_capacity(BAR_WIDTH);
        let (mut drawn, mut cumulative) = (0, 0u128);
        for &(letter, _, tokens) in &segments {
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
        for (letter, name, tokens) in segments.into_iter().filter(|s| s.2 > 0) {
            let percent = tokens as f64 * 100.0 / window as f64;
            let _ = writeln!(
                out,
                "  {letter} {name:<26} {tokens:>8} tokens {percent:>5.1}%"
            );
        }
    }
}

fn kind_letter(kind: ChunkKind) -> char {
    match kind {
        ChunkKind::System => 'S',
        ChunkKind::Agent => 'A',
        ChunkKind::Workflow => 'W',
        ChunkKind::Delegation => 'D',
        ChunkKind::Environment => 'E',
        ChunkKind::Thinking => 'T',
        ChunkKind::Output => 'O',
    }
}

fn reason_name(reason: DropReason) -> &'static str {
    match reason {
        DropReason::Filtered => "filtered",
        DropReason::Orphan => "orphan",
        DropReason::Budget => "budget",
        DropReason::ClearThinking => "clear_thinking_20251015",
    }
}

/// What happened to a chunk, in words: a chunk its cap cut and the budget
/// then stubbed or dropped says both.
fn decision_text(d: &ChunkDecision) -> String {
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
        } => {
            let why = match reason {
                StubReason::ClearToolUses => "clear_tool_uses_20250919",
                StubReason::Budget => "disposable",
            };
            format!("stubbed {tokens_before} -> {tokens_after} ({why})")
        }
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
    use crate::memory::{MemoryChunk, MemoryState};
    use crate::roles::{ChunkKind, Role};
    use crate::{BuildResult, ContextBuilder};

    /// A run of tests whose ~23k-token log the default tool-result cap cuts,
    /// before the latest user turn and a newer tool use.
    fn session() -> MemoryState {
        let log: Vec<String> = (0..6000).map(|i| format!("line{i} ok")).collect();
        MemoryState::new()
            .with_chunk(MemoryChunk::agent("u1", Role::User, "Run the tests."))
            .with_chunk(
                MemoryChunk::new("c1", ChunkKind::Workflow)
                    .with_tool("bash")
                    .with_call_id("k"),
            )
            .with_chunk(
                MemoryChunk::new("r1", ChunkKind::Environment)
                    .with_tool("bash")
                    .with_call_id("k")
                    .with_text(log.join(" ")),
            )
            .with_chunk(MemoryChunk::agent("a1", Role::Assistant, "All green."))
            .with_chunk(MemoryChunk::agent("u2", Role::User, "Now the docs."))
            .with_chunk(
                MemoryChunk::new("c2", ChunkKind::Workflow)
                    .with_tool("ls")
                    .with_call_id("k2"),
            )
            .with_chunk(
                MemoryChunk::new("r2", ChunkKind::Environment)
                    .with_tool("ls")
                    .with_call_id("k2")
                    .with_text("docs/"),
            )
    }

    fn build(state: &MemoryState, max_tokens: usize, low_water: f64) -> BuildResult {
        let mut builder = ContextBuilder::new();
        builder.max_tokens(max_tokens).policy_mut().low_water = low_water;
        builder.build(state).unwrap()
    }

    fn row<'e>(explained: &'e str, id: &str) -> &'e str {
        let start = format!("  {id} ");
        explained
            .lines()
            .find(|line| line.starts_with(&start))
            .unwrap_or_else(|| panic!("no row for {id} in\n{explained}"))
    }

    #[test]
    fn the_id_column_fits_every_id() {
        let long = "a-chunk-id-far-longer-than-twenty-four-characters";
        let state = MemoryState::new()
            .with_chunk(MemoryChunk::agent("u1", Role::User, "hi"))
            .with_chunk(MemoryChunk::agent(long, Role::Assistant, "hello"))
            .with_chunk(MemoryChunk::agent("漢字", Role::Assistant, "ok"))
            .with_chunk(MemoryChunk::agent("two\nlines", Role::Assistant, "ok"));
        let explained = ContextBuilder::new().build(&state).unwrap().explain();
        let column = |line: &str, word: &str| {
            let at = line
                .find(word)
                .unwrap_or_else(|| panic!("{word} in {line}"));
            line[..at].chars().count()
        };
        let header = explained.lines().nth(1).unwrap();
        let decision_at = column(header, "decision");
        for id in ["u1", long, "漢字", "two\\nlines"] {
            assert_eq!(
                column(row(&explained, id), "kept"),
                decision_at,
                "{explained}"
            );
        }
    }

    #[test]
    fn a_chunk_cut_then_dropped_says_both() {
        let result = build(&session(), 3000, 0.8);
        let r1 = &result.decisions[2];
        let from = r1.truncated_from.expect("the cap cut r1");
        assert!(from > r1.tokens && r1.tokens > 8000, "{r1:?}");
        let expected = format!("  truncated {from} -> {}, then dropped (budget)", r1.tokens);
        let explained = result.explain();
        assert!(row(&explained, "r1").ends_with(&expected), "{explained}");

        let result = build(&session(), 12_000, 0.8);
        let Decision::Truncated {
            tokens_before,
            tokens_after,
            cap,
        } = result.decisions[2].decision
        else {
            panic!("{:?}", result.decisions[2]);
        };
        assert_eq!(result.decisions[2].truncated_from, None);
        let expected = format!("  truncated {tokens_before} -> {tokens_after} (cap {cap})");
        let explained = result.explain();
        assert!(row(&explained, "r1").ends_with(&expected), "{explained}");
    }

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

    #[test]
    fn the_report_says_what_set_the_cut() {
        let state = session();
        let marked = build(&state, 3000, 0.8);
        assert_eq!(marked.trim_target, Some(2400));
        assert!(
            marked.explain().contains(
                "\n  trimmed to 80% for cache stability: at most 2400 of 3000 tokens \
                 (the low-water mark), not the budget\n"
            ),
            "{}",
            marked.explain()
        );
        let full = build(&state, 3000, 1.0);
        assert_eq!(full.trim_target, Some(3000));
        assert!(
            full.explain()
                .contains("\n  trimmed to fit the budget: at most 3000 tokens\n"),
            "{}",
            full.explain()
        );
        let fits = build(&state, 12_000, 0.8);
        assert_eq!(fits.trim_target, None);
        assert!(!fits.explain().contains("trimmed"), "{}", fits.explain());

        let mut builder = ContextBuilder::new();
        builder.max_tokens(3000).previous(&marked);
        let next = state.with_chunk(MemoryChunk::agent("a2", Role::Assistant, "On it."));
        let kept = builder.build(&next).unwrap();
        assert_eq!(kept.trim_target, None);
        assert!(
            kept.explain()
                .contains("\n  kept the previous build's cut for cache stability\n"),
            "{}",
            kept.explain()
        );
    }
}
