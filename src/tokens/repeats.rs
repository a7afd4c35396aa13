//! Tokens of a long pre-tokenizer piece that is one character repeated,
//! from a short stand-in of it.
//!
//! `bpe-openai`'s backtracking encoder is linear, but its constant grows
//! with the vocabulary's long tokens: 8 MB of `=` cost it 6.4 s, 50 MB of
//! one letter about a second and a 50 MB token buffer. A piece that is a
//! run of one character between a short head and tail (a line of padding,
//! a base64 or hex blob of one digit, a wall of spaces) is encoded instead
//! from a stand-in with a run of a few hundred characters, and the tokens
//! the run adds are found in a cycle of the stand-in's encoding.
//!
//! Why this is exact rests on two facts about byte-pair encoding that the
//! `bpe` crate proves in its README and its encoders rely on: any run of
//! tokens inside a valid encoding is the valid encoding of its bytes
//! (its Corollary II), and two valid encodings that end and start with the
//! same token join over it into the valid encoding of the joined bytes
//! (Corollary III). Take the stand-in's encoding `e_0 … e_k` and two equal
//! tokens `e_i = e_j` (`i < j`) whose bytes from `e_i` to `e_j` are `w`
//! whole characters of the run. `e_0 … e_j` and `e_i … e_k` are valid, and
//! joined over `e_j = e_i` they give `e_0 … e_{j-1} e_i … e_{j-1} e_j … e_k`:
//! the valid encoding of the stand-in with `w` more characters in its run,
//! with the cycle `e_i … e_{j-1}` once more. Repeated, the run grows by any
//! multiple of `w`, so a stand-in whose run is as long as the piece's modulo
//! `w` gives the piece's tokens. The encoding is unique, so they are the
//! tokens tiktoken gives. When no such cycle turns up, the whole piece goes
//! to the backtracking encoder.

use std::ops::Range;

use bpe_openai::Tokenizer;
use bpe_openai::byte_pair_encoding::BytePairEncoding;
use rustc_hash::FxHashMap;

/// Pieces shorter than this are encoded whole: the stand-in saves nothing.
const MIN_BYTES: usize = 4096;
/// Characters of the run in the first stand-in: enough for its encoding to
/// reach the cycle it repeats in the middle of a long run.
const STAND_IN_CHARS: usize = 512;
/// The longest head or tail a piece may have around its run.
const MAX_EDGE_BYTES: usize = 256;

/// The tokens of a piece: `head`, then `cycle` `repeats` times, then
/// `tail`.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Repeated {
    head: Vec<u32>,
    cycle: Vec<u32>,
    repeats: usize,
    tail: Vec<u32>,
}

impl Repeated {
    pub(crate) fn count(&self) -> usize {
        self.head.len() + self.cycle.len() * self.repeats + self.tail.len()
    }

    pub(crate) fn tokens(&self) -> impl Iterator<Item = u32> + '_ {
        let cycles = std::iter::repeat_n(&self.cycle, self.repeats).flatten();
        self.head.iter().chain(cycles).chain(&self.tail).copied()
    }

    /// The tokens of a text whose run is `missing` characters longer than
    /// that of the stand-in `tokens` encode: the first of the stand-in's
    /// `cycles` whose width divides `missing`, repeated as often as it
    /// takes; `None` when no width does.
    pub(super) fn stretched(tokens: &[u32], cycles: Vec<Cycle>, missing: usize) -> Option<Self> {
        let cycle = (cycles.into_iter()).find(|cycle| missing.is_multiple_of(cycle.width))?;
        Some(Repeated {
            head: tokens[..cycle.end].to_vec(),
            cycle: tokens[cycle.start..cycle.end].to_vec(),
            repeats: missing / cycle.width,
            tail: tokens[cycle.end..].to_vec(),
        })
    }
}

/// A text as its head, `chars` repeats of one character `unit`, and its
/// tail: a piece here, a segment in [`char_runs`](super::char_runs).
pub(super) struct Run<'t> {
    pub(super) head: &'t str,
    pub(super) unit: &'t str,
    pub(super) chars: usize,
    pub(super) tail: &'t str,
}

/// The tokens of `piece` (one pre-tokenizer piece) through a stand-in, or
/// `None` when it is not a long run of one character between a short head
/// and tail, or when the stand-in shows no cycle to repeat.
pub(crate) fn repeated(bpe: &BytePairEncoding, piece: &str) -> Option<Repeated> {
    let run = run_of(piece)?;
    let cycles_of = |chars: usize, tokens: &[u32]| {
        let lens: Vec<usize> = tokens.iter().map(|&t| bpe.token_len(t)).collect();
        // The tail begins in the piece, so a token that starts right after
        // the run's last character is on the run's side of a cycle too.
        let end = run.head.len() + chars * run.unit.len() + 1;
        cycles(tokens, &lens, run.head.len()..end, run.unit.len())
    };
    let first = bpe.encode_via_backtracking(run.stand_in(STAND_IN_CHARS).as_bytes());
    let width = cycles_of(STAND_IN_CHARS, &first)
        .iter()
        .map(|cycle| cycle.width)
        .min()?;
    // A stand-in whose run is as long as the piece's modulo `width`.
    let chars = STAND_IN_CHARS + (run.chars - STAND_IN_CHARS) % width;
    let tokens = bpe.encode_via_backtracking(run.stand_in(chars).as_bytes());
    Repeated::stretched(&tokens, cycles_of(chars, &tokens), run.chars - chars)
}

/// The run of one character through the middle of `piece`, when it leaves
/// at most [`MAX_EDGE_BYTES`] on either side.
fn run_of(piece: &str) -> Option<Run<'_>> {
    if piece.len() < MIN_BYTES {
        return None;
    }
    let run = Run::around(piece, piece.floor_char_boundary(piece.len() / 2))?;
    let edges_short = run.head.len() <= MAX_EDGE_BYTES && run.tail.len() <= MAX_EDGE_BYTES;
    (edges_short && run.chars >= 2 * STAND_IN_CHARS).then_some(run)
}

/// How many of `chunks` in a row, from the first, are `unit`: compared
/// 32 units at a time, then one by one.
fn repeats<'a, I>(bytes: &'a [u8], unit: &[u8], chunks: impl Fn(&'a [u8], usize) -> I) -> usize
where
    I: Iterator<Item = &'a [u8]>,
{
    const BLOCK: usize = 32;
    let block = unit.repeat(BLOCK);
    let blocks = chunks(bytes, block.len())
        .take_while(|chunk| *chunk == block.as_slice())
        .count();
    let rest = chunks(bytes, unit.len())
        .skip(blocks * BLOCK)
        .take_while(|chunk| *chunk == unit)
        .count();
    blocks * BLOCK + rest
}

impl<'t> Run<'t> {
    /// The run of the character at byte `middle` of `text` (a character
    /// boundary), as far as it goes either way.
    pub(super) fn around(text: &'t str, middle: usize) -> Option<Self> {
        let width = text[middle..].chars().next()?.len_utf8();
        let unit = &text[middle..middle + width];
        let (bytes, unit_bytes) = (text.as_bytes(), unit.as_bytes());
        let start = middle - width * repeats(&bytes[..middle], unit_bytes, <[u8]>::rchunks_exact);
        let end = middle + width * repeats(&bytes[middle..], unit_bytes, <[u8]>::chunks_exact);
        Some(Run {
            head: &text[..start],
            unit,
            chars: (end - start) / width,
            tail: &text[end..],
        })
    }

    /// The text with `chars` characters in its run.
    pub(super) fn stand_in(&self, chars: usize) -> String {
        let mut text =
            String::with_capacity(self.head.len() + chars * self.unit.len() + self.tail.len());
        text.push_str(self.head);
        for _ in 0..chars {
            text.push_str(self.unit);
        }
        text.push_str(self.tail);
        text
    }
}

/// Tokens `start..end` of an encoding, with `tokens[start] ==
/// tokens[end]`, whose bytes are `width` whole characters of the run.
pub(super) struct Cycle {
    start: usize,
    end: usize,
    pub(super) width: usize,
}

/// The cycles of `tokens`, `lens` bytes long in turn, the encoding of a
/// text whose run of `unit`-byte characters may start a token anywhere in
/// `run` (bytes): for each token that starts on a character there, back to
/// the last equal token that did. The bytes between the two are whole
/// characters of the run.
pub(super) fn cycles(tokens: &[u32], lens: &[usize], run: Range<usize>, unit: usize) -> Vec<Cycle> {
    let mut seen: FxHashMap<u32, (usize, usize)> = FxHashMap::default();
    let mut offset = 0;
    let mut found = Vec::new();
    for (index, (&token, &len)) in tokens.iter().zip(lens).enumerate() {
        let at = offset;
        offset += len;
        if !run.contains(&at) || !(at - run.start).is_multiple_of(unit) {
            continue;
        }
        if let Some((start, from)) = seen.insert(token, (index, at)) {
            found.push(Cycle {
                start,
                end: index,
                width: (at - from) / unit,
            });
        }
    }
    found
}

/// Tokens of `text` (a segment holding a long run) with the linear
/// encoder, each piece that is a long run of one character through a
/// stand-in.
pub(crate) fn count(linear: &Tokenizer, text: &str) -> usize {
    linear
        .split(text)
        .map(|piece| match repeated(&linear.bpe, piece) {
            Some(repeated) => repeated.count(),
            None => linear.bpe.count(piece.as_bytes()),
        })
        .sum()
}

/// The token ids of `text`, as [`count`] counts them.
pub(crate) fn encode(linear: &Tokenizer, text: &str, tokens: &mut Vec<u32>) {
    for piece in linear.split(text) {
        match repeated(&linear.bpe, piece) {
            Some(repeated) => tokens.extend(repeated.tokens()),
            None => tokens.extend(linear.bpe.encode_via_backtracking(piece.as_bytes())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoders() -> [&'static BytePairEncoding; 2] {
        [
            &bpe_openai::o200k_base().bpe,
            &bpe_openai::cl100k_base().bpe,
        ]
    }

    /// Every printable ASCII character and a few wider ones, at lengths
    /// over several periods, between the heads and tails pieces have: the
    /// stand-in's tokens equal the backtracking encoder's on the whole
    /// piece. Every one of them shows a cycle. (One test per encoding, so
    /// the two run at once.)
    fn assert_repeated_tokens_equal_the_whole_encoding(bpe: &BytePairEncoding) {
        let wide = ["é", "漢", "🦀", "\u{3000}"];
        let units = (0x21u8..0x7f).map(|b| (b as char).to_string());
        for unit in units.chain(wide.map(str::to_owned)) {
            for (head, tail) in [("", ""), (" ", ""), ("x", "'s"), ("", "\n")] {
                for chars in [4096, 4097, 4099, 4100, 4103, 4111, 4127, 4159, 5000, 20_011] {
                    let piece = format!("{head}{}{tail}", unit.repeat(chars));
                    let repeated = repeated(bpe, &piece)
                        .unwrap_or_else(|| panic!("no cycle: {unit:?} x {chars}"));
                    let whole = bpe.encode_via_backtracking(piece.as_bytes());
                    assert_eq!(repeated.count(), whole.len(), "{unit:?} x {chars}");
                    assert!(repeated.tokens().eq(whole), "{unit:?} x {chars}");
                }
            }
        }
    }

    #[test]
    fn repeated_tokens_equal_the_whole_encoding_o200k() {
        assert_repeated_tokens_equal_the_whole_encoding(encoders()[0]);
    }

    #[test]
    fn repeated_tokens_equal_the_whole_encoding_cl100k() {
        assert_repeated_tokens_equal_the_whole_encoding(encoders()[1]);
    }

    #[test]
    fn only_long_runs_between_short_edges_are_repeated() {
        let bpe = encoders()[0];
        assert!(repeated(bpe, &"=".repeat(4095)).is_none());
        assert!(repeated(bpe, &"=".repeat(1 << 20)).is_some());
        assert!(repeated(bpe, &format!("{}{}", "x".repeat(300), "=".repeat(5000))).is_none());
        let letters: String = (0..8000)
            .map(|i| (b'a' + (i * 7 % 26) as u8) as char)
            .collect();
        assert!(repeated(bpe, &letters).is_none());
    }
}
