//! A human-readable breakdown of a build, for `--explain`.

use std::fmt::Write;

use crate::budget::Decision;
use crate::memory::ChunkKind;
use crate::message::BuildResult;

const BAR_WIDTH: usize = 60;

impl BuildResult {
    /// Each chunk's kind, tokens and decision, then a bar of the window by kind.
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
        let id_width = self
            .decisions
            .iter()
            .map(|d| d.id.len())
            .max()
            .unwrap_or(2)
            .clamp(2, 24);
        let _ = writeln!(
            out,
            "  {:<id_width$}  {:<11}  {:>8}  decision",
            "id", "kind", "tokens"
        );
        for d in &self.decisions {
            let what = match d.decision {
                Decision::Kept if d.protected => "kept (protected)".to_owned(),
                Decision::Kept => "kept".to_owned(),
                Decision::Dropped { reason } => format!("dropped ({})", reason_name(reason)),
            };
            let _ = writeln!(
                out,
                "  {:<id_width$}  {:<11}  {:>8}  {what}",
                d.id,
                d.kind.as_str(),
                d.tokens
            );
        }
        if let Some(elided) = self.elided {
            let _ = writeln!(
                out,
                "  elided {} chunks, {} tokens{}",
                elided.chunks,
                elided.tokens,
                if elided.marker {
                    ""
                } else {
                    " (no room for the marker)"
                }
            );
        }
        for warning in &self.warnings {
            let _ = writeln!(out, "  warning: {warning}");
        }
        self.write_bar(&mut out);
        out
    }

    /// One letter per slice of the window: kinds kept, framing, free, reserve.
    fn write_bar(&self, out: &mut String) {
        let mut segments: Vec<(char, &str, usize)> = Vec::new();
        let mut content = 0;
        for kind in ChunkKind::ALL {
            let tokens: usize = self
                .decisions
                .iter()
                .filter(|d| d.kind == kind && d.decision == Decision::Kept)
                .map(|d| d.tokens)
                .sum();
            content += tokens;
            segments.push((kind_letter(kind), kind.as_str(), tokens));
        }
        let other = self.token_count.saturating_sub(content);
        segments.push(('+', "framing, prompt and markers", other));
        segments.push(('.', "free", self.budget.saturating_sub(self.token_count)));
        segments.push(('|', "reserve", self.reserve_output));
        let window = self.max_tokens.max(1);
        let mut bar = String::with_capacity(BAR_WIDTH);
        let mut used = 0;
        let mut cumulative = 0;
        for &(letter, _, tokens) in &segments {
            cumulative += tokens;
            let upto = (cumulative * BAR_WIDTH).div_ceil(window).min(BAR_WIDTH);
            for _ in used..upto {
                bar.push(letter);
            }
            used = used.max(upto);
        }
        let _ = writeln!(out, "window [{bar}]");
        for (letter, name, tokens) in segments.into_iter().filter(|s| s.2 > 0) {
            let percent = tokens as f64 * 100.0 / window as f64;
            let _ = writeln!(
                out,
                "  {letter} {name:<28} {tokens:>8} tokens {percent:>5.1}%"
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

fn reason_name(reason: crate::budget::DropReason) -> &'static str {
    match reason {
        crate::budget::DropReason::Filtered => "filtered",
        crate::budget::DropReason::Orphan => "orphan result",
        crate::budget::DropReason::Budget => "budget",
    }
}
