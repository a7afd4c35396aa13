//! The exact counter, over the `tiktoken` crate's encoders.
//!
//! # Why the `tiktoken` crate
//!
//! This crate used to carry its own byte-pair encoder, fed with ranks read
//! out of tiktoken-rs through a private function. Measured side by side on
//! the same texts (`cargo bench --features bench --bench peers`, docs/benchmarks.md), the pure-Rust
//! `tiktoken` crate counts 1.3-2.3x faster than that encoder and 2.2-6x
//! faster than tiktoken-rs on agent session text, minified JSON and source
//! code; 1.5-3.3x faster than `bpe-openai` on JSON and source and level with
//! it (within run-to-run noise) on session text. It loads its tables in a
//! third of the encoder's time (`bpe-openai` loads faster still), and gives tiktoken-rs's
//! `encode_ordinary` tokens exactly (`tests/it/encoder.rs`) through its public
//! `count` and `encode`, which read `<|endoftext|>` as ordinary text. So we
//! count with it and maintain no encoder of our own.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use bpe_openai::Tokenizer;
use rustc_hash::FxHashMap;
use tiktoken::CoreBpe;

use super::char_runs;
use super::known::{self, KnownCount};
use super::repeats::{self, Repeated};
use super::segments::{Route, Segment, segments};

use crate::error::Result;
use crate::tokens::{Encoding, TokenCounter};

/// Exact counts with a tiktoken encoding.
///
/// Tables load once per process, on the first count of an encoding, and
/// are shared by every counter: making a counter costs nothing, so a
/// command that never counts (an export, a listing) never loads them.
/// Counting runs in linear time on every shape of text (a million spaces,
/// megabytes of one letter, base64, CJK without spaces, no-break spaces):
/// the segments around a long run or whitespace outside ASCII are counted
/// on their own, where the `tiktoken` crate would not be linear: a long
/// run of one character from a short stand-in by the crate (see
/// `char_runs`), the others by `bpe-openai`'s linear encoder, whose tables
/// load the first time one needs it (see `segments`).
#[derive(Clone, Copy)]
pub struct TiktokenCounter {
    encoding: Encoding,
}

/// A part of a text and how it is counted.
enum Part<'t> {
    /// By the `tiktoken` crate.
    Crate(&'t str),
    /// By the linear encoder, each long run of one character through a
    /// stand-in (see `repeats`).
    Linear(&'static Tokenizer, &'t str),
    /// A segment counted through a short stand-in (see `char_runs`).
    Repeated(Repeated),
}

/// What the process holds for one kind of table, made on first use:
/// `o200k_harmony` differs from `o200k_base` only in special tokens, which
/// ordinary text never produces, so the two share one.
struct Table {
    bpe: OnceLock<CoreBpe>,
    load: fn() -> CoreBpe,
    /// Whether a thread loading `bpe` was started (`load_in_background`).
    loading: AtomicBool,
    memo: OnceLock<Memo>,
    /// Counts handed over by `known::remember`, answered while `bpe` is
    /// not loaded.
    known: OnceLock<Memo>,
}

impl Table {
    const fn new(load: fn() -> CoreBpe) -> Table {
        Table {
            bpe: OnceLock::new(),
            load,
            loading: AtomicBool::new(false),
            memo: OnceLock::new(),
            known: OnceLock::new(),
        }
    }

    fn of(encoding: Encoding) -> &'static Table {
        static O200K: Table = Table::new(tiktoken::encoding::o200k_base);
        static CL100K: Table = Table::new(tiktoken::encoding::cl100k_base);
        match encoding {
            Encoding::O200kBase | Encoding::O200kHarmony => &O200K,
            Encoding::Cl100kBase => &CL100K,
        }
    }
}

impl TiktokenCounter {
    /// A counter for `encoding`; its tables load on its first count in the
    /// process.
    ///
    /// # Errors
    ///
    /// None today: the tables of every [`Encoding`] are built in. The
    /// `Result` stays for encodings whose tables may not be.
    pub fn new(encoding: Encoding) -> Result<Self> {
        Ok(TiktokenCounter { encoding })
    }

    /// Starts loading the tables of `encoding` on another thread, once per
    /// process, so that a caller reading its input meanwhile finds them
    /// loaded when it counts.
    pub(crate) fn load_in_background(encoding: Encoding) {
        if !Table::of(encoding).loading.swap(true, Ordering::Relaxed) {
            std::thread::spawn(move || TiktokenCounter { encoding }.bpe());
        }
    }

    /// The encoding's tables, loaded on the first call in the process.
    fn bpe(&self) -> &'static CoreBpe {
        let table = Table::of(self.encoding);
        table.bpe.get_or_init(table.load)
    }

    /// The encoding this counter uses.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// The token ids of `text` encoded as ordinary text.
    pub fn encode(&self, text: &str) -> Vec<u32> {
        let mut tokens = Vec::new();
        self.by_segment(text, |part| match part {
            Part::Crate(text) => tokens.extend(self.bpe().encode(text)),
            Part::Linear(linear, text) => repeats::encode(linear, text, &mut tokens),
            Part::Repeated(repeated) => tokens.extend(repeated.tokens()),
        });
        tokens
    }

    /// Tokens of `text`, whatever its length, in linear time.
    fn count_any(&self, text: &str) -> usize {
        let mut total = 0;
        self.by_segment(text, |part| {
            total += match part {
                Part::Crate(text) => self.bpe().count(text),
                Part::Linear(linear, text) => repeats::count(linear, text),
                Part::Repeated(repeated) => repeated.count(),
            }
        });
        total
    }

    /// Calls `each` on the parts of `text` in order, cut where counts add up,
    /// each with the way it is counted (see `segments`): counts and tokens
    /// add up over them.
    fn by_segment(&self, text: &str, mut each: impl FnMut(Part<'_>)) {
        let mut at = 0;
        for segment in segments(text) {
            let range = segment.range.clone();
            if at < range.start {
                each(Part::Crate(&text[at..range.start]));
            }
            each(self.part_of(&segment, &text[range.clone()]));
            at = range.end;
        }
        if at < text.len() || text.is_empty() {
            each(Part::Crate(&text[at..]));
        }
    }

    /// How `segment`, whose text is `text`, is counted: a long run of one
    /// character from a short stand-in by the crate (see `char_runs`),
    /// else by the encoder [`linear_for`](Self::linear_for) picks.
    fn part_of<'t>(&self, segment: &Segment, text: &'t str) -> Part<'t> {
        let stand_in = match segment.route() {
            Route::LongRun => char_runs::repeated(self.bpe(), text),
            Route::Alone | Route::Linear => None,
        };
        // Asked only when needed: it counts the run toward loading the
        // linear encoder.
        match stand_in {
            Some(repeated) => Part::Repeated(repeated),
            None => match self.linear_for(segment) {
                Some(linear) => Part::Linear(linear, text),
                None => Part::Crate(text),
            },
        }
    }

    /// The linear encoder where `segment` is counted by it (see [`Route`]).
    /// Long runs that no stand-in counts (see `part_of`) go to the crate
    /// until the process has met
    /// [`LONG_RUN_BYTES_BEFORE_LINEAR`] bytes of them, then to the linear
    /// encoder: the few a real text holds (a ruled line, a column of blank
    /// lines) are not worth the second encoder's tables, 66 MB and 40 ms to
    /// load, and the crate never spends more than a few milliseconds on them.
    fn linear_for(&self, segment: &Segment) -> Option<&'static Tokenizer> {
        static RUN_BYTES: AtomicUsize = AtomicUsize::new(0);
        let linear = match segment.route() {
            Route::Alone => false,
            Route::Linear => true,
            Route::LongRun => {
                let len = segment.range.len();
                RUN_BYTES.fetch_add(len, Ordering::Relaxed) + len >= LONG_RUN_BYTES_BEFORE_LINEAR
            }
        };
        linear.then(|| self.linear())
    }

    /// The linear-time encoder of the same encoding (`bpe-openai`'s tables
    /// load on first use).
    fn linear(&self) -> &'static Tokenizer {
        match self.encoding {
            Encoding::O200kBase | Encoding::O200kHarmony => bpe_openai::o200k_base(),
            Encoding::Cl100kBase => bpe_openai::cl100k_base(),
        }
    }
}

impl std::fmt::Debug for TiktokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TiktokenCounter")
            .field("encoding", &self.encoding)
            .finish()
    }
}

/// Bytes of long runs the crate counts in a process before the linear
/// encoder counts them: at the crate's slowest on runs (5 MB/s), 20 ms.
const LONG_RUN_BYTES_BEFORE_LINEAR: usize = 128 * 1024;

/// Texts up to this many bytes are memoized: closing tags with their
/// separator, role names and markers recur in every build, and for them the
/// cost of a tokenizer call is mostly its setup.
const MEMO_MAX_BYTES: usize = 32;
/// Entries the memo holds before it starts over, bounding its memory.
const MEMO_MAX_ENTRIES: usize = 1 << 16;

/// Short texts and their counts, one map per table (`o200k_harmony` shares
/// `o200k_base`'s); looked up by `&str`, so a hit allocates nothing.
type Memo = Mutex<FxHashMap<Box<str>, usize>>;

impl TiktokenCounter {
    fn memo(&self) -> &'static Memo {
        Table::of(self.encoding).memo.get_or_init(Memo::default)
    }
}

/// The most counts [`remember`] holds: four records' worth. Past it, it
/// starts again, before a record, which is handed over whole.
const KNOWN_MAX_ENTRIES: usize = 4 * known::MOST_TEXTS;

/// Holds `counts` for their encodings' counters, which answer them without
/// their tables while those are not loaded (see `known`).
pub(super) fn remember<'c>(counts: impl ExactSizeIterator<Item = &'c KnownCount>) {
    let incoming = counts.len();
    for count in counts {
        let known = Table::of(count.encoding).known.get_or_init(Memo::default);
        let mut known = known.lock().unwrap_or_else(|e| e.into_inner());
        if known.len() + incoming > KNOWN_MAX_ENTRIES {
            known.clear();
        }
        known.insert(count.text.clone(), count.tokens);
    }
}

impl TiktokenCounter {
    /// The count [`remember`] holds for `text`, while the tables are not
    /// loaded.
    fn known_count(&self, text: &str) -> Option<usize> {
        let table = Table::of(self.encoding);
        let known = table.known.get()?;
        if text.len() > known::MOST_BYTES || table.bpe.get().is_some() {
            return None;
        }
        let known = known.lock().unwrap_or_else(|e| e.into_inner());
        known.get(text).copied()
    }

    /// The count of `text` by the tables (or the memo of their counts).
    fn count_exact(&self, text: &str) -> usize {
        if text.len() > MEMO_MAX_BYTES {
            return self.count_any(text);
        }
        // A poisoned lock only means another thread panicked mid-insert of
        // an exact count; the map is still valid.
        let memo = self.memo();
        if let Some(&tokens) = memo.lock().unwrap_or_else(|e| e.into_inner()).get(text) {
            return tokens;
        }
        let tokens = self.bpe().count(text);
        let mut memo = memo.lock().unwrap_or_else(|e| e.into_inner());
        if memo.len() >= MEMO_MAX_ENTRIES {
            memo.clear();
        }
        memo.insert(Box::from(text), tokens);
        tokens
    }
}

impl TokenCounter for TiktokenCounter {
    fn count(&self, text: &str) -> usize {
        let tokens = (self.known_count(text)).unwrap_or_else(|| self.count_exact(text));
        known::note(self.encoding, text, tokens);
        tokens
    }

    fn is_exact(&self) -> bool {
        true
    }

    /// No pre-tokenizer piece of these encodings crosses a cut (see
    /// [`parts`](crate::tokens)); tests check sum == recount.
    fn additive_at_clean_cuts(&self) -> bool {
        true
    }

    fn encoding_name(&self) -> &str {
        self.encoding.name()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tiktoken_rs::CoreBPE;

    fn reference(encoding: Encoding) -> &'static CoreBPE {
        match encoding {
            Encoding::Cl100kBase => tiktoken_rs::cl100k_base_singleton(),
            _ => tiktoken_rs::o200k_base_singleton(),
        }
    }

    #[test]
    fn special_token_text_counts_as_ordinary_text() {
        for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
            let counter = TiktokenCounter::new(encoding).unwrap();
            // As a special token this would be exactly one token.
            assert!(counter.count("<|endoftext|>") > 1, "{encoding:?}");
            assert_eq!(
                counter.count("a <|endoftext|> b"),
                reference(encoding)
                    .encode_ordinary("a <|endoftext|> b")
                    .len()
            );
        }
    }

    /// Long runs go to either encoder (see `linear_for`): both give the
    /// same tokens, whichever the process happens to use.
    #[test]
    fn both_encoders_give_the_same_tokens_on_long_runs() {
        let texts = [
            format!("a {} b\n", "x".repeat(300)),
            format!("rule\n{}\n", "═".repeat(400)),
            format!("{}x", " ".repeat(1000)),
            "漢字かな".repeat(100),
            format!("{}\u{a0}.", "=".repeat(300)),
        ];
        for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
            let counter = TiktokenCounter::new(encoding).unwrap();
            for text in &texts {
                let mut linear = Vec::new();
                repeats::encode(counter.linear(), text, &mut linear);
                assert_eq!(linear, counter.bpe().encode(text), "{encoding:?}");
                assert_eq!(counter.encode(text), linear, "{encoding:?}");
            }
        }
    }

    #[test]
    fn tables_load_once() {
        let a = TiktokenCounter::new(Encoding::O200kBase).unwrap();
        let b = TiktokenCounter::new(Encoding::O200kHarmony).unwrap();
        assert!(std::ptr::eq(a.bpe(), b.bpe()));
    }
}
