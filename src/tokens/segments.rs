//! How a text is cut for counting: the segments the `tiktoken` crate could
//! not count in linear time, each cut where counts add up.
//!
//! Two shapes of text cost the crate more than their length: a long run of
//! one class of bytes (see `long_runs`), and whitespace outside ASCII (see
//! `wide_spaces`). Counts add up at the cuts [`parts`](super::parts) finds
//! (after a newline before anything but whitespace or `/`, after a word
//! before whitespace or punctuation), so the text around each is cut there
//! into a segment of its own, most of them a few words long (see [`Route`]
//! for which encoder counts each). Every encoder gives tiktoken's tokens
//! exactly, so which one counts a segment changes only the time.

use std::ops::Range;

use super::long_runs::next_long_run;
use super::parts::{is_cut, next_cut};
use super::wide_spaces::next_wide_space;

/// The longest segment around whitespace outside ASCII that the crate
/// counts: each such piece costs it what follows in the segment, at most
/// this much.
const WIDE_SPACES_ALONE_MAX: usize = 1024;

/// A part of a text to count on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Segment {
    pub range: Range<usize>,
    /// Whether it holds a long run of one class of bytes.
    pub long_run: bool,
    /// Whether it holds whitespace outside ASCII.
    pub wide_space: bool,
}

/// Which encoder counts a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    /// The crate, on the segment alone: short, around wide spaces.
    Alone,
    /// `bpe-openai`'s backtracking encoder: wide spaces in a long segment,
    /// which would cost the crate the square of its length.
    Linear,
    /// A long run: the crate counts a run of one character from a short
    /// stand-in; the linear encoder counts the others several times faster
    /// than the crate, which counts a few short ones without loading a
    /// second set of tables; the counter chooses.
    LongRun,
}

impl Segment {
    pub(crate) fn route(&self) -> Route {
        if self.wide_space && self.range.len() > WIDE_SPACES_ALONE_MAX {
            Route::Linear
        } else if self.long_run {
            Route::LongRun
        } else {
            Route::Alone
        }
    }
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
        let end = next_cut(text, hazard.end).unwrap_or(text.len());
        let range = cut_before(text, hazard.start, floor)..end;
        from = range.end;
        match segments.last_mut() {
            Some(last) if last.range.end >= range.start => {
                last.range.end = range.end;
                last.long_run |= is_run;
                last.wide_space |= !is_run;
            }
            _ => segments.push(Segment {
                range,
                long_run: is_run,
                wide_space: !is_run,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn routes(text: &str) -> Vec<(Range<usize>, Route)> {
        segments(text)
            .into_iter()
            .map(|segment| (segment.range.clone(), segment.route()))
            .collect()
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
        assert_eq!(routes(&text), vec![(11..311, Route::LongRun)]);
        let json = format!("{{\"key\": \"({})\", \"n\": 1}}", "=".repeat(300));
        assert_eq!(routes(&json), vec![(5..316, Route::LongRun)]);
        // Runs in one segment, or in touching ones, become one.
        let two = format!("{0} {0}", "=".repeat(300));
        assert_eq!(routes(&two), vec![(0..two.len(), Route::LongRun)]);
    }

    #[test]
    fn a_wide_space_is_counted_alone_and_linear_when_long() {
        let text = "one line\nword\u{a0}\u{a0}, more\nlast line\n";
        let at = text.find("word").unwrap();
        let end = text.find("\nlast").unwrap();
        assert_eq!(routes(text), vec![(at..end, Route::Alone)]);
        // No cut anywhere: the whole text, too long for the crate alone.
        let hostile = "1\u{a0}".repeat(1000);
        assert_eq!(routes(&hostile), vec![(0..hostile.len(), Route::Linear)]);
        // Many short segments that touch become one long one.
        let dense = "a\u{a0} ".repeat(300);
        assert_eq!(routes(&dense), vec![(0..dense.len(), Route::Linear)]);
        // With a long run too.
        let both = format!("{}\u{a0}.", "=".repeat(300));
        assert_eq!(routes(&both), vec![(0..both.len(), Route::LongRun)]);
    }
}
