//! What the budget left out of the history: [`Elision`].

use serde::{Deserialize, Serialize};

/// History the budget left out, summarized by the marker that replaces it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Elision {
    /// How many chunks were dropped for the budget.
    pub chunks: usize,
    /// Their tokens, as rendered.
    pub tokens: usize,
    /// Whether the marker made it into the prompt (it is left out when the
    /// protected content fits but the marker would not, and when a summary
    /// took its place).
    pub marker: bool,
    /// Whether a summarizer's `<progress_summary>` stands for the dropped history.
    pub summary: bool,
}
