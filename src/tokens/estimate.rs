//! The counter for models whose tokenizer is not public.

use crate::error::Result;
use crate::tokens::{Encoding, TiktokenCounter, TokenCounter};

/// A conservative estimate: the exact `o200k_base` count plus a quarter,
/// rounded up. Other vendors' tokenizers (Anthropic's, say) produce more tokens
/// than `o200k_base` on most text, rarely 25% more; the margin keeps a budget
/// built on this estimate from overflowing the real window. Always reported
/// with `token_count_exact: false`.
#[derive(Debug, Clone, Copy)]
pub struct EstimateCounter {
    base: TiktokenCounter,
}

impl EstimateCounter {
    /// The estimate, loading the `o200k_base` tables on first use.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Tokenizer`](crate::ErrorKind::Tokenizer) if the tables fail to load.
    pub fn new() -> Result<Self> {
        Ok(EstimateCounter {
            base: TiktokenCounter::new(Encoding::O200kBase)?,
        })
    }
}

impl TokenCounter for EstimateCounter {
    fn count(&self, text: &str) -> usize {
        let exact = self.base.count(text);
        exact + exact.div_ceil(4)
    }

    fn is_exact(&self) -> bool {
        false
    }

    /// Rounding up a quarter of each side never gives less than rounding
    /// up a quarter of the whole, so sums of parts bound the whole from above.
    fn additive_at_clean_cuts(&self) -> bool {
        true
    }

    fn encoding_name(&self) -> &str {
        "estimate(o200k_base+25%)"
    }
}
