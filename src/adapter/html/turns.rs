//! A replay as HTML: the prompt's tokens per turn against the budget and
//! the low-water mark, the stable prefix a prompt cache reuses, every turn
//! where the prefix broke and why, then the last turn's window.

use std::fmt::Write;

use super::page::{Page, escape, grouped, percent, write_facts};
use super::window::write_window;
use crate::model::memory::MemoryState;
use crate::output::cache::CacheReport;
use crate::output::result::BuildResult;

/// One turn of a replay, as its page charts it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ReplayTurn {
    /// The turn's number, from 1.
    pub turn: usize,
    /// The chunks the session held.
    pub chunks: usize,
    /// The prompt's tokens.
    pub token_count: usize,
    /// The prompt budget.
    pub budget: usize,
    /// The low-water mark: the size a trim aims at.
    pub low_water: usize,
    /// What the prompt cache kept of the previous turn's prompt (none on
    /// the first turn).
    pub cache: Option<CacheReport>,
    /// Whether a compaction was applied after the turn.
    pub compacted: bool,
}

impl ReplayTurn {
    /// Turn `turn`, built as `result` from `chunks` chunks, trimming to
    /// `low_water` of the budget.
    pub fn of(turn: usize, chunks: usize, result: &BuildResult, low_water: f64) -> Self {
        ReplayTurn {
            turn,
            chunks,
            token_count: result.token_count,
            budget: result.budget,
            low_water: (result.budget as f64 * low_water) as usize,
            cache: result.cache.clone(),
            compacted: false,
        }
    }

    /// Whether the previous turn's prompt did not all carry over.
    pub fn broke(&self) -> bool {
        (self.cache.as_ref()).is_some_and(|c| c.broke_at.is_some())
    }

    /// The stable prefix's tokens (0 on the first turn).
    fn stable(&self) -> usize {
        self.cache.as_ref().map_or(0, |c| c.stable_prefix_tokens)
    }
}

/// `turns` of a replay as one self-contained HTML page, with the window
/// of `last` (the last turn's build, and the input it was built from).
pub fn replay_page(turns: &[ReplayTurn], last: Option<(&BuildResult, &MemoryState)>) -> String {
    let mut page = Page::new(format!("Replay: {} turns", turns.len()));
    let out = &mut page.body;
    out.push_str("<h1>Replay</h1>\n");
    write_summary(out, turns);
    if turns.is_empty() {
        out.push_str("<p class=\"note\">The session has no chunks: no turn was built.</p>\n");
    } else {
        write_chart(out, turns);
        write_breaks(out, turns);
    }
    if let Some((result, state)) = last {
        out.push_str("<h2>The last turn's window</h2>\n");
        write_window(out, result, Some(state));
    }
    page.finish()
}

/// The run's figures: turns, breaks, compactions, the share cached.
fn write_summary(out: &mut String, turns: &[ReplayTurn]) {
    let breaks = turns.iter().filter(|t| t.broke()).count();
    let compactions = turns.iter().filter(|t| t.compacted).count();
    let sent: usize = turns.iter().skip(1).map(|t| t.token_count).sum();
    let stable: usize = turns.iter().map(ReplayTurn::stable).sum();
    let facts = [
        ("turns", grouped(turns.len())),
        ("prefix_breaks", grouped(breaks)),
        ("compactions", grouped(compactions)),
        ("prompt_tokens_after_turn_1", grouped(sent)),
        ("stable_prefix_tokens", grouped(stable)),
        ("reusable_share", percent(stable, sent)),
    ];
    let attributes = format!(" data-turns=\"{}\" data-breaks=\"{breaks}\"", turns.len());
    write_facts(out, &attributes, &facts);
}

/// The chart's frame: its size, and the plot inside the axes.
const WIDTH: f64 = 1000.0;
const HEIGHT: f64 = 340.0;
const LEFT: f64 = 70.0;
const BOTTOM: f64 = 30.0;
const TOP: f64 = 12.0;

/// Tokens per turn: the prompt, the budget, the low-water mark, the
/// stable prefix (shaded), and a dot on each turn whose prefix broke.
fn write_chart(out: &mut String, turns: &[ReplayTurn]) {
    let highest = turns.iter().map(|t| t.budget.max(t.token_count)).max();
    let top = highest.unwrap_or(1).max(1) as f64 * 1.05;
    let last = turns.len().saturating_sub(1).max(1) as f64;
    let x = |i: usize| LEFT + (WIDTH - LEFT - 10.0) * i as f64 / last;
    let y = |tokens: usize| TOP + (HEIGHT - TOP - BOTTOM) * (1.0 - tokens as f64 / top);
    let line = |value: &dyn Fn(&ReplayTurn) -> usize| {
        let points = turns.iter().enumerate();
        points
            .map(|(i, t)| format!("{:.1},{:.1}", x(i), y(value(t))))
            .collect::<Vec<_>>()
            .join(" ")
    };
    out.push_str("<h2>Prompt tokens per turn</h2>\n");
    let _ = writeln!(
        out,
        "<svg class=\"chart\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" role=\"img\" \
         aria-label=\"prompt tokens per turn\">"
    );
    let step = tick_step(top);
    for tokens in (0..).map(|i| i * step).take_while(|&t| t as f64 <= top) {
        let at = y(tokens);
        let _ = writeln!(
            out,
            "<line class=\"l-axis\" x1=\"{LEFT}\" x2=\"{WIDTH}\" y1=\"{at:.1}\" y2=\"{at:.1}\"/>\
             <text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            LEFT - 6.0,
            at + 4.0,
            grouped(tokens)
        );
    }
    let base = y(0);
    let stable = line(&ReplayTurn::stable);
    let _ = writeln!(
        out,
        "<polygon class=\"l-stable\" points=\"{LEFT:.1},{base:.1} {stable} {:.1},{base:.1}\"/>",
        x(turns.len().saturating_sub(1))
    );
    for (class, points) in [
        ("l-budget", line(&|t| t.budget)),
        ("l-low", line(&|t| t.low_water)),
        ("l-prompt", line(&|t| t.token_count)),
    ] {
        let _ = writeln!(out, "<polyline class=\"{class}\" points=\"{points}\"/>");
    }
    for (i, turn) in turns.iter().enumerate().filter(|(_, t)| t.broke()) {
        let _ = writeln!(
            out,
            "<circle class=\"break\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"3.5\"><title>turn {}: {}</title></circle>",
            x(i),
            y(turn.token_count),
            turn.turn,
            escape(&break_text(turn))
        );
    }
    let label_y = HEIGHT - 8.0;
    let _ = writeln!(
        out,
        "<text x=\"{LEFT}\" y=\"{label_y}\">turn 1</text>\
         <text x=\"{WIDTH}\" y=\"{label_y}\" text-anchor=\"end\">turn {}</text></svg>",
        turns.last().map_or(0, |t| t.turn)
    );
    out.push_str(
        "<p><span class=\"sw k-agent\"></span>prompt tokens <span class=\"sw k-stubbed\"></span>budget \
         <span class=\"sw k-truncated\"></span>low-water mark <span class=\"sw k-kept\"></span>stable \
         prefix (what a prompt cache reuses) <span class=\"sw k-stubbed\"></span>dot: the prefix broke</p>\n",
    );
}

/// A round step between the chart's ticks (1, 2 or 5 times a power of
/// ten), giving four to ten of them up to `top`.
fn tick_step(top: f64) -> usize {
    let rough = (top / 5.0).max(1.0);
    let power = 10f64.powf(rough.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * power)
        .find(|&step| step >= rough)
        .unwrap_or(10.0 * power);
    step.max(1.0) as usize
}

/// The break of `turn` in words.
fn break_text(turn: &ReplayTurn) -> String {
    let broke = turn.cache.as_ref().and_then(|c| c.broke_at.as_ref());
    broke.map_or_else(String::new, |b| b.describe())
}

/// Every turn whose prefix broke: where, the cause, the tokens lost.
fn write_breaks(out: &mut String, turns: &[ReplayTurn]) {
    out.push_str("<h2>Turns where the prefix broke</h2>\n<table class=\"breaks\">\n");
    out.push_str(
        "<tr><th>turn</th><th>chunks</th><th>prompt</th><th>stable prefix</th><th>message</th>\
         <th>chunk</th><th>cause</th><th>tokens lost</th></tr>\n",
    );
    for turn in turns {
        let Some(broke) = turn.cache.as_ref().and_then(|c| c.broke_at.as_ref()) else {
            continue;
        };
        let chunk = broke.chunk.as_ref().map_or("", |c| c.as_str());
        let _ = writeln!(
            out,
            "<tr data-turn=\"{}\" data-cause=\"{cause}\"><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"id\">{}</td>\
             <td title=\"{}\">{cause}</td><td class=\"n\">{}</td></tr>",
            turn.turn,
            turn.turn,
            grouped(turn.chunks),
            grouped(turn.token_count),
            grouped(turn.stable()),
            broke.message,
            escape(chunk),
            escape(broke.cause.describe()),
            grouped(broke.tokens_lost),
            cause = broke.cause.as_str(),
        );
    }
    out.push_str("</table>\n");
}
