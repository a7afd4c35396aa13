//! Where a text holds a long run that the `tiktoken` crate would count in
//! more than linear time.
//!
//! The crate merges each pre-tokenizer piece with a heap, which goes
//! superlinear on long pieces: 8 MB of one letter cost it 4.5 s (46 times
//! 8 MB of session text), 8 MB of spaces 5.7 s. A piece is long only inside
//! a long run of one class of bytes: letters (any non-ASCII byte counts as
//! one, so CJK text and accented words are runs too), whitespace, or
//! punctuation; digits split every three. Such runs are rare in agent text
//! and common in hostile text (a minified bundle, base64 without breaks, a
//! log line of padding).
//!
//! Counts add up at clean cuts (see [`parts`](super::parts)), so a text
//! splits into segments there: the segments that hold a long run are
//! counted by `bpe-openai`, whose backtracking encoder is linear by
//! construction, and the rest by `tiktoken`. Both give tiktoken's tokens
//! exactly (`tests/encoder.rs` holds them to tiktoken-rs on long runs of
//! letters, digits, spaces, punctuation, CJK and emoji); which one counts a
//! segment changes only the time.

use std::ops::Range;

use super::parts::starts_clean;

/// Bytes in a run of one class from which a segment is counted by the
/// linear encoder. Below it `tiktoken` is as fast or faster.
pub(crate) const LONG_RUN: usize = 256;

/// The class of each byte: pieces never grow across a change of class.
/// Letters (any non-ASCII byte among them) 0, whitespace 1, punctuation 2,
/// digits 3 (never long: digits split every three).
const CLASS: [u8; 256] = {
    let mut table = [2u8; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = match b as u8 {
            b'a'..=b'z' | b'A'..=b'Z' | 0x80..=0xFF => 0,
            b' ' | b'\t' | b'\n' | b'\r' | 0x0B | 0x0C => 1,
            b'0'..=b'9' => 3,
            _ => 2,
        };
        b += 1;
    }
    table
};
const DIGIT: u8 = 3;

/// The first run of at least [`LONG_RUN`] bytes of one class (digits
/// aside) that starts at or after `from`.
fn next_long_run(bytes: &[u8], from: usize) -> Option<Range<usize>> {
    let mut start = from;
    let mut kind = *CLASS.get(*bytes.get(from)? as usize)?;
    for (i, &b) in bytes.iter().enumerate().skip(from + 1) {
        let class = CLASS[b as usize];
        if class != kind {
            if i - start >= LONG_RUN && kind != DIGIT {
                return Some(start..i);
            }
            (start, kind) = (i, class);
        }
    }
    (bytes.len() - start >= LONG_RUN && kind != DIGIT).then_some(start..bytes.len())
}

/// The byte ranges of `text`, cut at clean cuts, that hold a run of at
/// least [`LONG_RUN`] bytes of one class (digits aside), ascending and
/// apart; none for most texts. Linear: each byte is looked at a bounded
/// number of times.
pub(crate) fn long_segments(text: &str) -> Vec<Range<usize>> {
    let bytes = text.as_bytes();
    let mut segments: Vec<Range<usize>> = Vec::new();
    if bytes.len() < LONG_RUN {
        return segments;
    }
    let mut from = 0;
    while let Some(run) = next_long_run(bytes, from) {
        // Back no further than the last segment, forward past the run: the
        // next scan starts where this segment ends.
        let floor = segments.last().map_or(0, |last| last.end);
        let segment = clean_cut_before(text, run.start, floor)..clean_cut_after(text, run.end);
        from = segment.end;
        match segments.last_mut() {
            Some(last) if last.end >= segment.start => last.end = segment.end,
            _ => segments.push(segment),
        }
    }
    segments
}

/// Whether a cut at `at` is clean (see [`parts`](super::parts)).
fn is_clean_cut(text: &str, at: usize) -> bool {
    at > 0 && text.as_bytes()[at - 1] == b'\n' && starts_clean(&text[at..])
}

/// The last clean cut in `floor..=at`, else `floor`.
fn clean_cut_before(text: &str, at: usize, floor: usize) -> usize {
    (floor + 1..=at)
        .rev()
        .find(|&i| is_clean_cut(text, i))
        .unwrap_or(floor)
}

/// The first clean cut at or after `at`, else the end.
fn clean_cut_after(text: &str, at: usize) -> usize {
    (at..text.len())
        .find(|&i| is_clean_cut(text, i))
        .unwrap_or(text.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_text_has_no_long_segment() {
        let text = "fn main() {\n    println!(\"hi\");\n}\n".repeat(200);
        assert!(long_segments(&text).is_empty());
        assert!(long_segments(&"1234567890".repeat(100)).is_empty());
    }

    #[test]
    fn a_long_run_takes_its_lines_between_clean_cuts() {
        let text = format!("first line\n{}\nlast line\n", "A".repeat(300));
        let segments = long_segments(&text);
        assert_eq!(segments, vec![(11..text.len() - 10)]);
        assert!(text[segments[0].clone()].starts_with("AAA"));
        // Runs in one segment, or in touching ones, become one.
        let two = format!("{0} {0}", "=".repeat(300));
        assert_eq!(long_segments(&two), vec![(0..two.len())]);
    }
}
