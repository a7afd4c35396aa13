//! Chunks rendered alone, as the prompt shows them (capped, with text):
//! what a compaction's plan hands the summarizer and counts as folded.

use std::sync::Arc;

use super::{Budget, Build, BuildCache, Outside, Pass};
use crate::error::Result;
use crate::model::memory::MemoryState;
use crate::settings::Settings;
use crate::tokens::TokenCounter;
use crate::tokens::parts::CountedText;

/// A build of `state` under `settings` that only renders and counts
/// chunks, with `counter`, through `cache`.
pub(crate) fn only_renders<'c>(
    settings: &'c Settings,
    state: &'c MemoryState,
    counter: &'c dyn TokenCounter,
    cache: &'c mut BuildCache,
) -> Build<'c> {
    cache.count_with(counter.encoding_name());
    let pass = Pass {
        policy: &settings.policy,
        previous: None,
        cache,
        outside: Outside::default(),
    };
    Build::new(settings, state, (counter, Budget::default()), pass)
}

impl Build<'_> {
    /// The chunks at `indices`, each rendered alone under its cap, from
    /// the cache or rendered into it, with its text.
    ///
    /// # Errors
    ///
    /// As [`Preparer::prepare`](super::ready::Preparer::prepare).
    pub(crate) fn rendered_alone(mut self, indices: &[usize]) -> Result<Vec<Arc<CountedText>>> {
        let state = self.state;
        let mut parts = Vec::with_capacity(indices.len());
        for &index in indices {
            let chunk = &state.chunks[index];
            let prepared = self.prepared(index, chunk)?;
            parts.push(self.with_text(prepared, index, chunk)?.part);
        }
        Ok(parts)
    }

    /// The tokens of the chunks at `indices`, each alone under its cap.
    ///
    /// # Errors
    ///
    /// As [`Preparer::prepare`](super::ready::Preparer::prepare).
    pub(crate) fn tokens_alone(mut self, indices: &[usize]) -> Result<Vec<usize>> {
        let state = self.state;
        let mut tokens = Vec::with_capacity(indices.len());
        for &index in indices {
            tokens.push(self.prepared(index, &state.chunks[index])?.part.alone());
        }
        Ok(tokens)
    }
}
