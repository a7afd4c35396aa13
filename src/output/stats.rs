//! What one build did: [`BuildStats`].

/// Work done by one build, for replay reports and benchmarks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct BuildStats {
    /// Chunks rendered by this build: those new or changed (or whose cap
    /// changed), rendered and counted, and those restored.
    pub chunks_rendered: usize,
    /// Tokens of the chunks this build counted: the text it had to tokenize.
    pub tokens_counted: usize,
    /// Chunks this build did not render: served from the cache, or carried
    /// over from the last build.
    pub chunks_cached: usize,
    /// Of the chunks rendered, those rendered again because the build kept
    /// one whose text had been let go (see docs/sessions.md).
    /// A chunk rendered whole keeps its counts and is not counted again.
    pub chunks_restored: usize,
    /// Whether the build extended the last one instead of planning every
    /// chunk again: the turn only appended chunks and the last cut, with
    /// them, still fits (see docs/sessions.md).
    pub extended: bool,
    /// Whether the build planned again only the chunks of the last prompt
    /// and the new ones, the rest dropped as before: the turn only appended
    /// chunks and the last cut no longer fit (see docs/sessions.md).
    pub replanned: bool,
    /// Of the builds [`replanned`](BuildStats::replanned), whether this one
    /// found the plan's cuts from the steps past the last cut alone and
    /// made them in place, writing only the messages they change (see
    /// docs/sessions.md).
    pub trimmed: bool,
}
