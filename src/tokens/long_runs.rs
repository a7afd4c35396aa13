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
//! The segments of text around such runs, cut where counts add up, are
//! counted on their own (see [`segments`](super::segments)). A segment
//! whose run is one character (but whitespace, numbers and apostrophes) is
//! counted by the crate from a copy with a short run (see
//! [`char_runs`](super::char_runs)); the others by `bpe-openai`'s
//! backtracking encoder, linear by construction, once a process has met
//! enough of them, each of their pieces that is one character repeated
//! from a short stand-in (see [`repeats`](super::repeats)). All of them
//! give tiktoken's tokens exactly
//! (`tests/it/encoder.rs` holds them to tiktoken-rs on long runs of
//! letters, digits, spaces, punctuation, CJK and emoji); which one counts a
//! segment changes only the time.

use std::ops::Range;

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
/// aside) at or after `from`. Such a run holds a whole aligned block of
/// half that length, so only blocks are tested, each up to its first byte
/// of another class: a few bytes a block in ordinary text.
pub(crate) fn next_long_run(bytes: &[u8], from: usize) -> Option<Range<usize>> {
    const BLOCK: usize = LONG_RUN / 2;
    let class = |at: usize| CLASS[bytes[at] as usize];
    let mut block = from.div_ceil(BLOCK) * BLOCK;
    while block + BLOCK <= bytes.len() {
        let kind = class(block);
        let uniform = kind != DIGIT && (block + 1..block + BLOCK).all(|at| class(at) == kind);
        if !uniform {
            block += BLOCK;
            continue;
        }
        let mut start = block;
        while start > from && class(start - 1) == kind {
            start -= 1;
        }
        let mut end = block + BLOCK;
        while end < bytes.len() && class(end) == kind {
            end += 1;
        }
        if end - start >= LONG_RUN {
            return Some(start..end);
        }
        block = end.div_ceil(BLOCK) * BLOCK;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_text_has_no_long_run() {
        let text = "fn main() {\n    println!(\"hi\");\n}\n".repeat(200);
        assert_eq!(next_long_run(text.as_bytes(), 0), None);
        assert_eq!(next_long_run("1234567890".repeat(100).as_bytes(), 0), None);
    }

    #[test]
    fn a_run_is_found_whole_from_where_it_is_asked() {
        let text = format!("first line\n{}\nlast line\n", "A".repeat(300));
        assert_eq!(next_long_run(text.as_bytes(), 0), Some(11..311));
        assert_eq!(next_long_run(text.as_bytes(), 40), Some(40..311));
        assert_eq!(next_long_run(text.as_bytes(), 311), None);
    }
}
