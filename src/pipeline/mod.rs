//! The pipeline: one build of a session's prompt, as a [`Build`] that
//! holds what the build reads (the compiled settings, the state, the
//! turn's policy and counter, the previous build) and the cache it works
//! in, with a method per stage:
//!
//! 1. [`prepare`](Build::prepare): render and count each chunk
//!    (`history`, through the cache, ahead on other threads: `ahead`),
//!    apply the `context_management` edits (`edit`), group the units and
//!    lay out the ladder of cuts;
//! 2. [`plan`](Build::plan): find the cut that fits (`squeeze` cuts the
//!    newest tool results when nothing else does) and summarize what it
//!    elides;
//! 3. [`assemble`](Build::assemble): settle the texts the prompt shows,
//!    record each chunk's fate, join the messages;
//! 4. [`report`](Build::report): the [`BuildResult`].
//!
//! A session's turn that only appended chunks extends its last build
//! instead (`extend`, `replan`), and a store keeps each chunk's counts
//! (`stored`). Nothing here reads a setting that was not compiled into
//! [`ContextConfig`](crate::ContextConfig), which makes a `Build`.

mod ahead;
mod alone;
mod assemble;
mod build_cache;
mod clear;
mod edit;
mod extend;
mod forecast;
mod frozen;
mod history;
mod plan;
mod prepare;
mod ready;
mod replan;
mod report;
mod squeeze;
mod stored;
mod trim;
mod trim_window;
mod trim_write;

use std::sync::Arc;

pub(crate) use alone::only_renders;
pub use build_cache::BuildCache;
pub(crate) use stored::{count_key, kept_alone_tokens, seed_counts};

use crate::budget::{AppliedEdit, ChunkDecision, Elision, Item, Planner, Policy, Step, Unit};
use crate::model::memory::MemoryState;
use crate::output::last_build::LastBuild;
use crate::output::message::Summary;
use crate::output::result::CompactionInEffect;
use crate::render::RenderContext;
use crate::settings::Settings;
use crate::tokens::TokenCounter;
use crate::tokens::parts::CountedText;
use assemble::Assembly;
use edit::Edited;
use history::History;
use ready::Preparer;

/// One build: what it reads, and the cache it works in.
pub(crate) struct Build<'a> {
    /// The compiled settings.
    settings: &'a Settings,
    state: &'a MemoryState,
    /// Renders and counts chunks with the build's counter and policy.
    preparer: Preparer<'a>,
    previous: Option<&'a LastBuild>,
    cache: &'a mut BuildCache,
    /// Chunks older than the state's that the budget drops unread.
    outside: Outside,
    budget: Budget,
    /// The compaction in effect, once the history is prepared.
    compaction: Option<CompactionInEffect>,
}

/// What one build runs with besides the compiled settings: a policy, the
/// previous build, and the cache it works in, which its caller owns. A
/// one-shot build passes the settings' policy and previous build and a
/// fresh cache; a session passes the turn's policy, its last build and the
/// cache it keeps.
pub(crate) struct Pass<'a> {
    pub(crate) policy: &'a Policy,
    pub(crate) previous: Option<&'a LastBuild>,
    pub(crate) cache: &'a mut BuildCache,
    /// Chunks older than the state's that the budget drops unread.
    pub(crate) outside: Outside,
}

/// What compiling the settings and checking them against the state
/// settle: the budget, and the warnings so far.
#[derive(Debug, Clone, Default)]
pub(crate) struct Budget {
    pub(crate) max_tokens: usize,
    pub(crate) available: usize,
    pub(crate) warnings: Vec<String>,
}

/// Chunks that come before a build's state and that the budget drops
/// without planning them (a stored chat's build reads only its newest
/// chunks): they count in the elided-history marker, which sits where the
/// first of them would.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Outside {
    pub(crate) chunks: usize,
    pub(crate) tokens: usize,
    /// The state's first chunk that comes after the first outside one: the
    /// marker goes before it, unless a dropped chunk comes first.
    pub(crate) marker_before: usize,
}

/// The cuts the planner may make, in order: whole units dropped, items
/// stubbed.
struct Ladder {
    units: Vec<Unit>,
    steps: Vec<Step>,
    /// How many leading steps repeat the previous build's cut.
    sticky: usize,
}

/// The prepare stage's output: the history, its ladder, and the system
/// message's parts.
struct Prepared<'s> {
    history: History<'s>,
    ladder: Ladder,
    /// The system prompt and fragments, then the system-role chunks.
    system: Vec<Arc<CountedText>>,
    /// What the `context_management` edits did.
    edited: Edited,
}

/// What the plan stage leaves for assembly: the cut, and the summary of
/// what it elides.
struct Planned<'s> {
    prepared: Prepared<'s>,
    layout: crate::budget::Layout,
    summary: Option<Summary>,
    /// What the caller should know of the plan (a summary left out, say).
    warnings: Vec<String>,
}

/// What assembly leaves for the report.
struct Assembled {
    assembly: Assembly,
    decisions: Vec<ChunkDecision>,
    total: usize,
    elision: Option<Elision>,
    trim_target: Option<usize>,
    summary: Option<Summary>,
    applied_edits: Vec<AppliedEdit>,
    warnings: Vec<String>,
}

impl<'a> Build<'a> {
    /// A build of `state` with `settings` (compiled), counting with
    /// `counter` against `budget`, with a pass's policy, previous build
    /// and cache.
    pub(crate) fn new(
        settings: &'a Settings,
        state: &'a MemoryState,
        (counter, budget): (&'a dyn TokenCounter, Budget),
        pass: Pass<'a>,
    ) -> Self {
        let preparer = Preparer {
            counter,
            ctx: RenderContext::new(settings.escape, settings.renderers.tag_set()),
            policy: pass.policy,
            content: settings.content.renderer(),
        };
        Build {
            preparer,
            settings,
            state,
            previous: pass.previous,
            cache: pass.cache,
            outside: pass.outside,
            budget,
            compaction: None,
        }
    }

    /// Builds the prompt, stage by stage.
    pub(crate) fn run(mut self) -> crate::error::Result<crate::BuildResult> {
        let prepared = self.prepare()?;
        let planned = self.plan(prepared)?;
        let assembled = self.assemble(planned)?;
        let trigger = self.compaction_trigger();
        let previous = self.previous.filter(|previous| previous.whole);
        let mut result = self.report(assembled);
        result.compaction_due = trigger.map(|t| result.untrimmed_tokens() > t);
        if let (Some(previous), Some(stable)) = (previous, result.stable_prefix_tokens) {
            result.cache = Some(result.cache_over(&previous.result, stable));
        }
        Ok(result)
    }

    /// The tokens above which compaction is due, if a trigger is set.
    pub(super) fn compaction_trigger(&self) -> Option<u64> {
        (self.preparer.policy).compaction_trigger(self.state, self.budget.available)
    }

    /// `planner`, counting the chunks outside the state in its marker,
    /// which goes before the first of `items` that comes after the first
    /// of them.
    fn outside_planned_by<'p>(&self, mut planner: Planner<'p>, items: &[Item]) -> Planner<'p> {
        let outside = self.outside;
        if outside.chunks > 0 {
            planner.frozen.0 += outside.chunks;
            planner.frozen.1 += outside.tokens;
            let first_after = items.iter().position(|i| i.chunk >= outside.marker_before);
            planner.marker_at = Some(first_after.unwrap_or(items.len()));
        }
        planner
    }
}
