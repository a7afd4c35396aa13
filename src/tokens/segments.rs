//! How a text is cut for counting: the segments the `tiktoken` crate could
//! not count in linear time, each cut where counts add up.
//!
//! Two shapes of text cost the crate more than their length: a long run of
//! one class of bytes (see `long_runs`), and whitespace outside ASCII (see
//! `wide_spaces`). Counts add up at the cuts [`parts`](super::parts) finds
//! (after a newline before anything but whitespace or `/`, after a word
//! before whitespace or punctuation), so the text around each is cut there
//! into a segment of its own, most of them a few words long. A segment that
//! holds a long run, or that is longer than [`LONG_RUN`] bytes, is counted
//! by `bpe-openai`'s backtracking encoder, linear by construction; a short
//! one around a wide space by the crate alone, where what follows the space
//! is short; and the text between segments by the crate. Every encoder
//! gives tiktoken's tokens exactly, so which one counts a segment changes
//! only the time.

use std::ops::Range;

use super::long_runs::{LONG_RUN, next_long_run};
use super::parts::is_cut;
use super::wide_spaces::next_wide_space;

/// A part of a text to count on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Segment {
    pub range: Range<usize>,
    /// Whether the linear encoder counts it.
    pub linear: bool,
}

/// The next place, at or after where the last search left off, where one
/// kind of hazard lies; `None` once there is none left.
struct Next {
    found: Option<Range<usize>>,
    find: fn(&[u8], usize) -> Option<Range<usize>>,
}

impl Next {
    fn new(bytes: &[u8], find: fn(&[u8], usize) -> Option<Range<usize>>) -> Next {
        Next {
            found: find(bytes, 0),
            find,
        }
    }

    /// The hazard at or after `from`, searched again only when the last one
    /// found lies before it.
    fn from(&mut self, bytes: &[u8], from: usize) -> Option<Range<usize>> {
        if self.found.as_ref().is_some_and(|found| found.start < from) {
            self.found = (self.find)(bytes, from);
        }
        self.found.clone()
    }
}

/// The segments of `text` to count on their own, ascending and apart; none
/// for most texts. Linear: each byte is looked at a bounded number of times.
pub(crate) fn segments(text: &str) -> Vec<Segment> {
    let bytes = text.as_bytes();
    let mut runs = Next::new(bytes, next_long_run);
    let mut spaces = Next::new(bytes, next_wide_space);
    let mut segments: Vec<Segment> = Vec::new();
    let mut from = 0;
    loop {
        let run = runs.from(bytes, from);
        let space = spaces.from(bytes, from);
        let (hazard, is_run) = match (run, space) {
            (Some(run), Some(space)) if space.start < run.start => (space, false),
            (Some(run), _) => (run, true),
            (None, Some(space)) => (space, false),
            (None, None) => break,
        };
        // Back no further than the last segment, forward past the hazard:
        // the next search starts where this segment ends.
        let floor = segments.last().map_or(0, |last| last.range.end);
        let range = cut_before(text, hazard.start, floor)..cut_after(text, hazard.end);
        from = range.end;
        match segments.last_mut() {
            Some(last) if last.range.end >= range.start => {
                last.range.end = range.end;
                last.linear |= is_run || last.range.len() > LONG_RUN;
            }
            _ => segments.push(Segment {
                linear: is_run || range.len() > LONG_RUN,
                range,
            }),
        }
    }
    segments
}

/// The last cut in `floor..=at`, else `floor`.
fn cut_before(text: &str, at: usize, floor: usize) -> usize {
    (floor + 1..=at)
        .rev()
        .find(|&i| is_cut(text, i))
        .unwrap_or(floor)
}

/// The first cut at or after `at`, else the end.
fn cut_after(text: &str, at: usize) -> usize {
    (at..text.len())
        .find(|&i| is_cut(text, i))
        .unwrap_or(text.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn linear(range: Range<usize>) -> Segment {
        Segment {
            range,
            linear: true,
        }
    }

    #[test]
    fn ordinary_text_has_no_segment() {
        let text = "fn main() {\n    println!(\"hi\");\n}\n".repeat(200);
        assert!(segments(&text).is_empty());
        assert!(segments(&"1234567890".repeat(100)).is_empty());
        assert!(segments("déjà vu, 東京").is_empty());
    }

    #[test]
    fn a_long_run_takes_what_lies_between_the_cuts_around_it() {
        let text = format!("first line\n{}\nlast line\n", "A".repeat(300));
        assert_eq!(segments(&text), vec![linear(11..311)]);
        let json = format!("{{\"key\": \"({})\", \"n\": 1}}", "=".repeat(300));
        assert_eq!(segments(&json), vec![linear(5..316)]);
        // Runs in one segment, or in touching ones, become one.
        let two = format!("{0} {0}", "=".repeat(300));
        assert_eq!(segments(&two), vec![linear(0..two.len())]);
    }

    #[test]
    fn a_wide_space_is_counted_alone_and_linear_when_long() {
        let text = "one line\nword\u{a0}\u{a0}, more\nlast line\n";
        let at = text.find("word").unwrap();
        let short = segments(text);
        assert_eq!(short.len(), 1);
        assert!(!short[0].linear);
        assert_eq!(short[0].range, at..text.find("\nlast").unwrap());
        // No cut anywhere: the whole text, too long for the crate alone.
        let hostile = "1\u{a0}".repeat(1000);
        assert_eq!(segments(&hostile), vec![linear(0..hostile.len())]);
        // Many short segments that touch become one long one.
        let dense = "a\u{a0} ".repeat(200);
        assert_eq!(segments(&dense), vec![linear(0..dense.len())]);
    }
}
