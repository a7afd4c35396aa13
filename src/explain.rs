//! A human-readable breakdown of a build, for `--explain`.

use std::fmt::Write;

use crate::budget::{Decision, DropReason};
use crate::memory::ChunkKind;
use crate::message::BuildResult;

const BAR_WIDTH: usize = 60;

impl BuildResult {
    /// Each chunk's kind, tokens, priority and decision, then bars of the
    /// window by kind and by decision.
    pub fn explain(&self) -> String {
        let mut out = String::new();
        let exact = if self.token_count_exact {
            "exact"
        } else {
            "estimate"
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
        let width = self
            .decisions
            .iter()
            .map(|d| d.id.len())
            .max()
            .unwrap_or(2)
            .clamp(2, 24);
        let _ = writeln!(
            out,
            "  {:<width$}  {:<11}  {:>8}  {:>8}  decision",
            "id", "kind", "tokens", "priority"
        );
        for d in &self.decisions {
            let protected = if d.protected { ", protected" } else { "" };
            let what = match d.decision {
                Decision::Kept => format!("kept{protected}"),
                Decision::Truncated {
                    tokens_before,
                    tokens_after,
                    cap,
                } => {
                    format!(
                        "truncated {tokens_before} -> {tokens_after} (body cap {cap}){protected}"
                    )
                }
                Decision::Stubbed {
                    tokens_before,
                    tokens_after,
                } => {
                    format!("stubbed {tokens_before} -> {tokens_after} (disposable)")
                }
                Decision::Dropped { reason } => format!("dropped ({})", reason_name(reason)),
            };
            let _ = writeln!(
                out,
                "  {:<width$}  {:<11}  {:>8}  {:>8}  {what}",
                d.id,
                d.kind.as_str(),
                d.tokens,
                d.priority
            );
        }
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
        if let Some(stable) = self.stable_prefix_tokens {
            let _ = writeln!(
                out,
                "  stable prefix: {stable} tokens identical to the previous build"
            );
        }
        for warning in &self.warnings {
            let _ = writeln!(out, "  warning: {warning}");
        }
        let in_prompt = |d: &&crate::budget::ChunkDecision| d.is_included();
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
        self.write_bar(&mut out, "by kind", by_kind);
        let mut by_decision = vec![('K', "kept", 0), ('T', "truncated", 0), ('S', "stubbed", 0)];
        for d in self.decisions.iter().filter(in_prompt) {
            let slot = match d.decision {
                Decision::Truncated { .. } => 1,
                Decision::Stubbed { .. } => 2,
                _ => 0,
            };
            by_decision[slot].2 += d.tokens;
        }
        self.write_bar(&mut out, "by decision", by_decision);
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
        out
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
    }
}
