//! Estimate factors learned from what the provider billed.

use std::sync::{Arc, RwLock};

use rustc_hash::FxHashMap;

use crate::error::{ErrorKind, Result};
use crate::tokens::EstimateFactor;

/// The margin, in percent, put on the largest ratio observed: the next
/// prompt's content may tokenize a little worse than the ones seen.
pub(crate) const CALIBRATION_MARGIN_PERCENT: u32 = 10;

/// The estimate factors of a process, per model: a floor (the
/// [default](EstimateFactor::DEFAULT) unless set) raised by what the
/// provider reports it billed.
///
/// A handle: clones share the same factors, and every method takes `&self`
/// and may be called from any thread. Give one to
/// [`ContextBuilder::calibration`](crate::ContextBuilder::calibration) and
/// report each provider response to it:
///
/// ```
/// # use agent_context::{ContextBuilder, MemoryChunk, MemoryState, Role, tokens::Calibration};
/// # let state = MemoryState::new().with_chunk(MemoryChunk::agent("u1", Role::User, "hi"));
/// let calibration = Calibration::new();
/// let mut builder = ContextBuilder::new();
/// builder.model("claude-sonnet-4").calibration(calibration.clone());
/// let result = builder.build(&state)?;
/// // ... send result.messages; the response's usage says what was billed:
/// let billed = 41; // input_tokens + cache_creation_input_tokens + cache_read_input_tokens
/// calibration.observe(&result, billed)?;
/// // Later builds for this model estimate at least what was billed.
/// assert!(builder.build(&state)?.token_count >= billed);
/// # Ok::<(), agent_context::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct Calibration {
    shared: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    floor: EstimateFactor,
    learned: RwLock<FxHashMap<String, EstimateFactor>>,
}

impl Calibration {
    /// Nothing learned yet; the floor is [`EstimateFactor::DEFAULT`].
    pub fn new() -> Self {
        Calibration::default()
    }

    /// Nothing learned yet; the floor is `factor`, a factor known from
    /// elsewhere (it may be below the default, down to 1.0).
    pub fn with_floor(factor: EstimateFactor) -> Self {
        Calibration {
            shared: Arc::new(Shared {
                floor: factor,
                learned: RwLock::default(),
            }),
        }
    }

    /// The factor estimates for `model` use now: the floor, or what was
    /// learned for this model name if that is larger.
    pub fn factor(&self, model: &str) -> EstimateFactor {
        let learned = self
            .shared
            .learned
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(model)
            .copied();
        learned.map_or(self.shared.floor, |f| f.max(self.shared.floor))
    }

    /// Learns that a prompt of `base_tokens` (its `o200k_base` count) was
    /// billed `billed_tokens` by `model`: the factor for `model` becomes at
    /// least the ratio plus 10 percent (at most [`EstimateFactor::MAX`]),
    /// and never drops. Returns the factor now in force for `model`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Option`] (option `billed_tokens`), learning nothing, if
    /// either figure is 0 or the ratio is above [`EstimateFactor::MAX`]
    /// (the figure is likely for another prompt).
    pub fn observe_counts(
        &self,
        model: &str,
        base_tokens: usize,
        billed_tokens: usize,
    ) -> Result<EstimateFactor> {
        let reject = |message: String| ErrorKind::Option {
            option: "billed_tokens".into(),
            message,
        };
        if billed_tokens == 0 || base_tokens == 0 {
            return Err(reject(format!(
                "cannot learn from billed {billed_tokens} tokens for a prompt of {base_tokens} \
                 o200k_base tokens: both must be above 0"
            ))
            .into());
        }
        let ratio = EstimateFactor::ratio_at_least(billed_tokens, base_tokens)
            .unwrap_or(EstimateFactor::MAX);
        if ratio > EstimateFactor::MAX {
            return Err(reject(format!(
                "billed {billed_tokens} tokens for a prompt of {base_tokens} o200k_base tokens is \
                 a ratio above {}: is the figure for this prompt?",
                EstimateFactor::MAX
            ))
            .into());
        }
        // The margin must not carry a factor past MAX, which docs/counting.md
        // and `EstimateFactor` promise no factor exceeds; MAX still bounds
        // the ratio just observed.
        let candidate = ratio
            .raised_by_percent(CALIBRATION_MARGIN_PERCENT)
            .min(EstimateFactor::MAX);
        let mut learned = self
            .shared
            .learned
            .write()
            .unwrap_or_else(|e| e.into_inner());
        let factor = learned.entry(model.to_owned()).or_insert(candidate);
        *factor = (*factor).max(candidate);
        Ok((*factor).max(self.shared.floor))
    }
}
