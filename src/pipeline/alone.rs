//! Chunks rendered alone, as the prompt shows them (capped, with text):
//! what a compaction's plan hands the summarizer and counts as folded.

use super::Build;
use crate::error::Result;
use crate::tokens::parts::CountedText;
use std::sync::Arc;

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
