//! Token counting: exact tiktoken counts, framing, and the model table.
//!
//! Content is always encoded as ordinary text: `<|endoftext|>` inside a tool
//! result is seven-odd tokens of text, never a special token, because that is
//! how providers bill it.

mod calibration;
mod char_runs;
mod estimate;
mod framing;
pub(crate) mod known;
mod long_runs;
mod model;
// Only `count` (the command) shares a text among threads.
#[cfg(any(feature = "command", test))]
mod parallel;
pub(crate) mod parts;
mod repeats;
#[cfg(test)]
mod routing_tests;
mod segments;
mod tiktoken;
mod wide_spaces;

use std::fmt;
use std::sync::Arc;

pub use calibration::Calibration;
pub use estimate::{EstimateCounter, EstimateFactor};
pub use framing::Framing;
pub use model::Encoding;
pub(crate) use model::{Route, model_info, route};
#[cfg(any(feature = "command", test))]
pub(crate) use parallel::count_on_threads;
pub use tiktoken::TiktokenCounter;

use crate::error::Result;

/// Counts the tokens of a text.
///
/// Implementations must be deterministic and must not panic on any input.
pub trait TokenCounter: Send + Sync + fmt::Debug {
    /// The number of tokens `text` encodes to.
    fn count(&self, text: &str) -> usize;

    /// Whether [`count`](TokenCounter::count) is the figure the provider bills
    /// (`false` for estimates).
    fn is_exact(&self) -> bool;

    /// The encoding's name (`o200k_base`, …), or a name for the estimate.
    fn encoding_name(&self) -> &str;

    /// Whether a text split at a *clean cut* (right after `\n` before a
    /// character that is neither whitespace nor `/`, or right after an ASCII
    /// letter or digit before ASCII whitespace or punctuation other than
    /// `'`) never counts more
    /// than its two sides counted apart: exactly as much for an exact
    /// counter (tiktoken encodings), which the builder relies on to count a
    /// long body inside its rendering once. Counters that say so let the builder count each chunk once
    /// and add the counts up; the others (the default) are counted whole,
    /// message by message, which is exact for any counter but slower.
    fn additive_at_clean_cuts(&self) -> bool {
        false
    }
}

/// The counter for a model: exact where [`route`] finds the model's
/// encoding, an [`EstimateCounter`] otherwise, with the factor
/// `calibration` holds for `model` (exact counts ignore it).
///
/// # Errors
///
/// [`ErrorKind::Tokenizer`](crate::ErrorKind::Tokenizer) if the tokenizer
/// tables are not built in (never: they all are, and load on the first count).
pub(crate) fn counter_for_model_calibrated(
    model: &str,
    calibration: &Calibration,
) -> Result<Arc<dyn TokenCounter>> {
    match route(model) {
        Route::Exact(encoding) => Ok(Arc::new(TiktokenCounter::new(encoding)?)),
        _ => Ok(Arc::new(EstimateCounter::with_factor(
            calibration.factor(model),
        )?)),
    }
}

/// The warning a build or count for `model` with `counter` carries: why
/// the counts are estimates, naming the model; `None` when they are exact.
pub(crate) fn estimate_warning(model: &str, counter: &dyn TokenCounter) -> Option<String> {
    (!counter.is_exact()).then(|| {
        format!(
            "model {model:?} {}; token counts are estimates: {}",
            route(model),
            counter.encoding_name()
        )
    })
}
