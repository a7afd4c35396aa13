//! The exact counter, over tiktoken-rs's tables.

use std::sync::{Mutex, OnceLock};

use rustc_hash::FxHashMap;

use crate::error::{ErrorKind, Result};
use crate::tokens::encoder::{OrdinaryEncoder, Pattern};
use crate::tokens::{Encoding, TokenCounter};

/// Exact counts with a tiktoken encoding.
///
/// Tables load once per process and are shared by every counter. Text is
/// split and merged by an encoder of this crate that gives tiktoken-rs's
/// `encode_ordinary` tokens over the same ranks (tests compare them), in
/// O(n log n) time at worst: tiktoken-rs's backtracking pre-tokenizer is slower and
/// panics near a million spaces.
#[derive(Clone, Copy)]
pub struct TiktokenCounter {
    encoding: Encoding,
    encoder: &'static OrdinaryEncoder,
}

impl TiktokenCounter {
    /// A counter for `encoding`, loading its tables on first use in the process.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Tokenizer`] if the embedded tables fail to load.
    pub fn new(encoding: Encoding) -> Result<Self> {
        static O200K: OnceLock<Result<OrdinaryEncoder, String>> = OnceLock::new();
        static CL100K: OnceLock<Result<OrdinaryEncoder, String>> = OnceLock::new();
        // tiktoken-rs's tables are read once into the encoder, then let go:
        // the encoder is all a counter needs.
        let loaded = match encoding {
            Encoding::O200kBase | Encoding::O200kHarmony => O200K.get_or_init(|| {
                let bpe = tiktoken_rs::o200k_base().map_err(|e| e.to_string())?;
                Ok(OrdinaryEncoder::new(&bpe, Pattern::O200k))
            }),
            Encoding::Cl100kBase => CL100K.get_or_init(|| {
                let bpe = tiktoken_rs::cl100k_base().map_err(|e| e.to_string())?;
                Ok(OrdinaryEncoder::new(&bpe, Pattern::Cl100k))
            }),
        };
        let encoder = loaded.as_ref().map_err(|message| ErrorKind::Tokenizer {
            encoding: encoding.name().to_owned(),
            message: message.clone(),
        })?;
        Ok(TiktokenCounter { encoding, encoder })
    }

    /// The encoding this counter uses.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// The token ids of `text` encoded as ordinary text.
    pub fn encode(&self, text: &str) -> Vec<u32> {
        self.encoder.encode(text)
    }
}

impl std::fmt::Debug for TiktokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TiktokenCounter")
            .field("encoding", &self.encoding)
            .finish()
    }
}

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
    fn count_uncached(&self, text: &str) -> usize {
        self.encoder.count(text)
    }

    fn memo(&self) -> &'static Memo {
        static O200K: OnceLock<Memo> = OnceLock::new();
        static CL100K: OnceLock<Memo> = OnceLock::new();
        match self.encoding {
            Encoding::O200kBase | Encoding::O200kHarmony => O200K.get_or_init(Memo::default),
            Encoding::Cl100kBase => CL100K.get_or_init(Memo::default),
        }
    }
}

impl TokenCounter for TiktokenCounter {
    fn count(&self, text: &str) -> usize {
        if text.len() > MEMO_MAX_BYTES {
            return self.count_uncached(text);
        }
        // A poisoned lock only means another thread panicked mid-insert of
        // an exact count; the map is still valid.
        let memo = self.memo();
        if let Some(&tokens) = memo.lock().unwrap_or_else(|e| e.into_inner()).get(text) {
            return tokens;
        }
        let tokens = self.count_uncached(text);
        let mut memo = memo.lock().unwrap_or_else(|e| e.into_inner());
        if memo.len() >= MEMO_MAX_ENTRIES {
            memo.clear();
        }
        memo.insert(Box::from(text), tokens);
        tokens
    }

    fn is_exact(&self) -> bool {
        true
    }

    /// No pre-tokenizer piece of these encodings crosses a clean cut (see
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

    #[test]
    fn tables_load_once() {
        let a = TiktokenCounter::new(Encoding::O200kBase).unwrap();
        let b = TiktokenCounter::new(Encoding::O200kHarmony).unwrap();
        assert!(std::ptr::eq(a.encoder, b.encoder));
    }
}
