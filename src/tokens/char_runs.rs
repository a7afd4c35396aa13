//! A segment whose long run is one character repeated, counted by the
//! `tiktoken` crate from a copy with a short run, so that a process never
//! loads the linear encoder's tables for it.
//!
//! A line of `=`, a wall of one letter, a column of one symbol: the
//! commonest long runs are one character. The crate encodes the segment
//! with a short run (see [`STAND_IN_CHARS`]), and the tokens a longer
//! run adds are found in a cycle of that encoding, as in
//! [`repeats`](super::repeats), whose argument this one rests on: it holds
//! for the pre-tokenizer piece that holds the run.
//!
//! Why the run lies in one piece, whose tokens the cycle may repeat:
//! every pattern of both encodings that matches a letter, a mark, or a
//! character that is neither whitespace, letter nor number matches a run
//! of it greedily, so no piece ends inside such a run, and shortening the
//! run by whole characters changes no other piece. The exceptions are
//! left to the linear encoder:
//! - whitespace (`\s+(?!\S)` ends a piece one character before the end of
//!   a run of spaces);
//! - numbers (`\p{N}{1,3}` ends a piece every three);
//! - apostrophes, and runs that start one or two characters after one
//!   (`cl100k_base` reads `'s`, `'re`, `'ll` and the like as pieces of
//!   their own, which may take a run's first characters).
//!
//! Only tokens that start on a character of the run count for a cycle:
//! one that starts where the run ends may belong to the next piece.

use std::sync::{Mutex, OnceLock};

use rustc_hash::FxHashMap;
use tiktoken::CoreBpe;

use super::long_runs::next_long_run;
use super::repeats::{Cycle, Repeated, Run, cycles};

/// Characters of the run in the first stand-ins tried, shortest first:
/// the first whose encoding shows a cycle is kept for the character. Runs
/// of a letter repeat within 64 (`x` in tokens of 8), a line of `=` needs
/// 128 (it has tokens of 64 and 96).
const STAND_IN_CHARS: [usize; 4] = [64, 128, 256, 512];
/// The most bytes of the long run of one class around the run of one
/// character: the rest of the class run stays whole in the stand-in.
const MAX_EDGE_BYTES: usize = 256;

/// What the first run of a character taught, by encoding (the address of
/// its tables) and character: the characters of the run of the stand-in
/// that showed a cycle and the cycle's, or `None` when none did (the
/// character is left to the linear encoder from then on, rather than tried
/// again at every size). A hint only: every stand-in's cycle is found in
/// its own encoding.
type Learned = Mutex<FxHashMap<(usize, char), Option<(usize, usize)>>>;

fn learned() -> &'static Learned {
    static LEARNED: OnceLock<Learned> = OnceLock::new();
    LEARNED.get_or_init(Learned::default)
}

/// The tokens of `segment` (a segment holding a long run, see `segments`)
/// through a stand-in, or `None` when its long run is not one character
/// that lies in one piece (see the module docs), or when no stand-in shows
/// a cycle to repeat.
pub(crate) fn repeated(bpe: &CoreBpe, segment: &str) -> Option<Repeated> {
    let run = run_of(segment)?;
    let key = (std::ptr::from_ref(bpe) as usize, run.unit.chars().next()?);
    // A poisoned lock only means another thread panicked mid-insert of a
    // hint; the map is still valid.
    let hint = learned()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&key)
        .copied();
    match hint {
        Some(None) => return None,
        Some(Some((chars, width))) => {
            if let Some(repeated) = through(bpe, &run, chars, width) {
                return Some(repeated);
            }
        }
        None => {}
    }
    for chars in STAND_IN_CHARS
        .into_iter()
        .take_while(|&chars| chars <= run.chars)
    {
        let tokens = bpe.encode(&run.stand_in(chars));
        let Some(width) = cycles_of(bpe, &run, chars, &tokens)
            .iter()
            .map(|c| c.width)
            .min()
        else {
            continue;
        };
        if let Some(repeated) = through(bpe, &run, chars, width) {
            learn(key, Some((chars, width)));
            return Some(repeated);
        }
    }
    if hint.is_none() {
        learn(key, None);
    }
    None
}

fn learn(key: (usize, char), lesson: Option<(usize, usize)>) {
    let mut learned = learned().lock().unwrap_or_else(|e| e.into_inner());
    learned.insert(key, lesson);
}

/// The tokens of `run`'s segment through a stand-in whose run is as long
/// as the segment's modulo `width`, from `chars` characters on.
fn through(bpe: &CoreBpe, run: &Run<'_>, chars: usize, width: usize) -> Option<Repeated> {
    let chars = chars + run.chars.checked_sub(chars)? % width;
    let tokens = bpe.encode(&run.stand_in(chars));
    Repeated::stretched(
        &tokens,
        cycles_of(bpe, run, chars, &tokens),
        run.chars - chars,
    )
}

/// The segment's one long run, when it is one character that lies in one
/// piece and spans its run of one class but at most [`MAX_EDGE_BYTES`] on
/// either side.
fn run_of(segment: &str) -> Option<Run<'_>> {
    let bytes = segment.as_bytes();
    let class = next_long_run(bytes, 0)?;
    if next_long_run(bytes, class.end).is_some() {
        return None;
    }
    let middle = segment.floor_char_boundary(class.start + class.len() / 2);
    let c = segment[middle..].chars().next()?;
    if c.is_whitespace() || c.is_numeric() || c == '\'' {
        return None;
    }
    let run = Run::around(segment, middle)?;
    let end = segment.len() - run.tail.len();
    let edges_short =
        run.head.len() - class.start <= MAX_EDGE_BYTES && class.end - end <= MAX_EDGE_BYTES;
    // `'re`, `'ve` and `'ll` may take a run's first letter after two.
    let after_apostrophe = run.head.chars().rev().take(2).any(|c| c == '\'');
    (edges_short && !after_apostrophe).then_some(run)
}

/// The cycles of `tokens`, the crate's encoding of `run`'s stand-in with
/// `chars` characters: only tokens that start on a character of the run
/// count (see the module docs).
fn cycles_of(bpe: &CoreBpe, run: &Run<'_>, chars: usize, tokens: &[u32]) -> Vec<Cycle> {
    let lens: Vec<usize> = tokens.iter().map(|&t| bpe.decode(&[t]).len()).collect();
    let (start, unit) = (run.head.len(), run.unit.len());
    cycles(tokens, &lens, start..start + chars * unit, unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoders() -> [&'static CoreBpe; 2] {
        [
            tiktoken::get_encoding("o200k_base").expect("built in"),
            tiktoken::get_encoding("cl100k_base").expect("built in"),
        ]
    }

    /// Runs of letters, marks and symbols, at lengths over several
    /// periods, between the heads and tails a segment has: the stand-in's
    /// tokens equal the crate's on the whole segment.
    fn assert_repeated_tokens_equal_the_whole_encoding(bpe: &CoreBpe) {
        let units = [
            "x", "X", "=", "-", "_", "é", "ǅ", "ʰ", "\u{301}", "漢", "═", "🦀", "}",
        ];
        let edges = [
            ("", ""),
            (" 12345", ""),
            ("a ", "\n"),
            ("=", "abc"),
            ("ABC", "def's"),
            ("word", " more"),
        ];
        for unit in units {
            for (head, tail) in edges {
                for chars in [256, 257, 259, 263, 300, 513, 1_000, 2_003] {
                    let segment = format!("{head}{}{tail}", unit.repeat(chars));
                    let whole = bpe.encode(&segment);
                    match repeated(bpe, &segment) {
                        Some(repeated) => {
                            assert_eq!(repeated.count(), whole.len(), "{segment:?}");
                            assert!(repeated.tokens().eq(whole), "{unit:?} x {chars}");
                        }
                        None => panic!("no stand-in: {head:?} {unit:?} x {chars} {tail:?}"),
                    }
                }
            }
        }
    }

    #[test]
    fn repeated_tokens_equal_the_whole_encoding() {
        encoders()
            .into_iter()
            .for_each(assert_repeated_tokens_equal_the_whole_encoding);
    }

    #[test]
    fn runs_that_may_span_pieces_are_left_to_the_linear_encoder() {
        let bpe = encoders()[0];
        for segment in [
            " ".repeat(300),
            format!("a{}b", "\t".repeat(300)),
            "٣".repeat(300),
            "'".repeat(300),
            format!("it'{}", "s".repeat(300)),
            format!("they'r{}", "e".repeat(300)),
            format!("we'L{}", "l".repeat(300)),
            format!("{}{}", "x".repeat(300), "y".repeat(300)),
            format!("{}{}", "ab".repeat(200), "x".repeat(300)),
        ] {
            assert!(repeated(bpe, &segment).is_none(), "{segment:?}");
        }
    }
}
