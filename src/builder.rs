//! [`ContextBuilder`]: one session in, budgeted messages out.

mod ahead;
mod config;
mod edit;
mod extend;
mod forecast;
mod frozen;
mod history;
mod replan;
mod squeeze;
mod stored;

pub use config::ContextConfig;
use edit::{Edited, Measure};
pub(crate) use extend::Carry;
use history::History;
pub(crate) use stored::kept_alone_tokens;

use std::sync::Arc;

use crate::assemble::{Assembly, assemble, summarize};
use crate::budget::{
    AppliedEdit, CapTarget, ChunkDecision, Decision, DropReason, ELIDED_TAG, Elision, Fate,
    HISTORY_START_TAG, Item, Layout, Planner, Policy, SUMMARY_TAG, Step, StubReason, Unit,
    all_start_clean, fates_after, framing_table, group_units, plan_steps,
};
use crate::chunk_cache::ChunkCache;
use crate::content::{ContentFormat, ContentRenderer};
use crate::error::{ErrorKind, Result};
use crate::format::{FormatOptions, FragmentFormat, render_fragments};
use crate::memory::MemoryState;
use crate::message::{
    BuildResult, ContextMessage, Resolved, Summary, Truncation, fingerprints, included,
};
use crate::prepare::Preparer;
use crate::previous::PreviousBuild;
use crate::render::{
    ChunkRenderer, DefaultRenderer, EscapeMode, Protocol, RenderContext, RendererRegistry,
    history_note,
};
use crate::roles::ChunkKind;
use crate::rows::Rows;
use crate::tokens::parts::CountedText;
use crate::tokens::{
    Calibration, Framing, Route, TiktokenCounter, TokenCounter, counter_for_model_calibrated,
    model_info, route,
};
use rustc_hash::FxHashSet;

/// Records in each chunk's decision what the plan made of its item.
fn record_fates(decisions: &mut [ChunkDecision], items: &[Item], layout: &Layout) {
    for (i, item) in items.iter().enumerate() {
        record_fate(&mut decisions[item.chunk], item, layout, i);
    }
}

/// Records in `decision` (as prepared: kept whole or truncated) what the
/// plan made of `item`, the `i`-th: kept, stubbed or dropped, with its
/// protection and priority.
fn record_fate(decision: &mut ChunkDecision, item: &Item, layout: &Layout, i: usize) {
    decision.protected = item.protected;
    decision.priority = item.priority;
    if let Decision::Truncated { tokens_before, .. } = decision.decision {
        decision.truncated_from = Some(tokens_before);
    }
    if layout.fates[i] == Fate::Dropped {
        decision.decision = Decision::Dropped {
            reason: DropReason::Budget,
        };
    } else if let (Fate::Stubbed, Some(stub)) = (layout.fates[i], &item.stub) {
        decision.decision = Decision::Stubbed {
            tokens_before: item.part.alone(),
            tokens_after: stub.alone(),
            reason: StubReason::Budget,
        };
        decision.tokens = stub.alone();
    } else {
        decision.truncated_from = None;
    }
}

/// What the budget step settles: the counter, the budget and the warnings
/// so far.
struct Budget {
    counter: Arc<dyn TokenCounter>,
    max_tokens: usize,
    available: usize,
    warnings: Vec<String>,
}

/// The cuts the planner may make, in order: whole units dropped, items
/// stubbed.
struct Ladder {
    units: Vec<Unit>,
    steps: Vec<Step>,
    /// How many leading steps repeat the previous build's cut.
    sticky: usize,
}

/// The prepare step's output: the history, its ladder, and the system
/// message's parts.
struct Prepared<'s> {
    history: History<'s>,
    ladder: Ladder,
    /// The system prompt and fragments, then the system-role chunks.
    system: Vec<Arc<CountedText>>,
    /// What the `context_management` edits did.
    edited: Edited,
}

/// What planning and assembly leave for the report.
struct Assembled {
    assembly: Assembly,
    decisions: Vec<ChunkDecision>,
    total: usize,
    elision: Option<Elision>,
    trim_target: Option<usize>,
    summary: Option<Summary>,
    applied_edits: Vec<AppliedEdit>,
    /// What the caller should know of the plan (a summary left out, say).
    warnings: Vec<String>,
}

/// How chunks' `content` is written: a built-in format, or a caller's
/// renderer.
#[derive(Clone)]
pub(crate) enum ContentChoice {
    Format(ContentFormat),
    Custom(Arc<dyn ContentRenderer>),
}

impl ContentChoice {
    fn renderer(&self) -> &dyn ContentRenderer {
        match self {
            ContentChoice::Format(format) => format.renderer(),
            ContentChoice::Custom(renderer) => renderer.as_ref(),
        }
    }

    /// The built-in format, which keys kept counts; `None` for a custom
    /// renderer.
    pub(crate) fn format(&self) -> Option<ContentFormat> {
        match self {
            ContentChoice::Format(format) => Some(*format),
            ContentChoice::Custom(_) => None,
        }
    }
}

impl std::fmt::Debug for ContentChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ContentChoice::Format(format) => f.debug_tuple("Format").field(format).finish(),
            ContentChoice::Custom(_) => f.write_str("Custom(..)"),
        }
    }
}

/// The model counted for when none is given.
pub const DEFAULT_MODEL: &str = "gpt-4o";

/// Builds the prompt of a session: renders every chunk, counts it exactly,
/// and keeps what fits the budget by the rules of [`budget`](crate::budget).
///
/// Setters take `&mut self` so options can be set in a loop; validation
/// happens in [`compile`](ContextBuilder::compile), which gives the
/// immutable [`ContextConfig`] builds read, and in
/// [`build`](ContextBuilder::build), which compiles first.
#[derive(Debug, Clone)]
pub struct ContextBuilder {
    model: String,
    counter: Option<Arc<dyn TokenCounter>>,
    calibration: Calibration,
    max_tokens: Option<usize>,
    reserve_output: usize,
    system_prompt: Option<String>,
    escape: EscapeMode,
    framing: Framing,
    include_kinds: Option<Vec<ChunkKind>>,
    exclude_kinds: Vec<ChunkKind>,
    include_ids: Option<Vec<String>>,
    renderers: RendererRegistry,
    content: ContentChoice,
    user_first: bool,
    fragments_format: FragmentFormat,
    fragment_options: FormatOptions,
    policy: Policy,
    previous: Option<Arc<PreviousBuild>>,
    threads: usize,
}

/// What one build runs with besides the builder's own settings: a policy,
/// the previous build, and the cache it works in, which its caller owns.
/// The one-shot builder passes its policy and previous build and a fresh
/// cache; a session passes the turn's policy, its last build and the cache
/// it keeps.
pub(crate) struct Pass<'a> {
    pub(crate) policy: &'a Policy,
    pub(crate) previous: Option<&'a PreviousBuild>,
    pub(crate) cache: &'a mut ChunkCache,
    /// Chunks older than the state's that the budget drops unread.
    pub(crate) outside: Outside,
}

impl Outside {
    /// `planner`, counting these chunks in its marker, which goes before
    /// the first of `items` that comes after the first of them.
    fn planned_by<'p>(&self, mut planner: Planner<'p>, items: &[Item]) -> Planner<'p> {
        if self.chunks > 0 {
            planner.frozen.0 += self.chunks;
            planner.frozen.1 += self.tokens;
            let first_after = items.iter().position(|i| i.chunk >= self.marker_before);
            planner.marker_at = Some(first_after.unwrap_or(items.len()));
        }
        planner
    }
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

impl Default for ContextBuilder {
    fn default() -> Self {
        ContextBuilder::new()
    }
}

impl ContextBuilder {
    /// A builder for [`DEFAULT_MODEL`] with the model's whole window as budget.
    pub fn new() -> Self {
        ContextBuilder {
            model: DEFAULT_MODEL.to_owned(),
            counter: None,
            calibration: Calibration::new(),
            max_tokens: None,
            reserve_output: 0,
            system_prompt: None,
            escape: EscapeMode::default(),
            framing: Framing::default(),
            include_kinds: None,
            exclude_kinds: Vec::new(),
            include_ids: None,
            renderers: RendererRegistry::new(),
            content: ContentChoice::Format(ContentFormat::default()),
            user_first: false,
            fragments_format: FragmentFormat::default(),
            fragment_options: FormatOptions::default(),
            policy: Policy::default(),
            previous: None,
            threads: 1,
        }
    }

    /// The most threads a build uses, [`threads`](ContextBuilder::threads)
    /// asked for more or not: past a few, the walk that decides each chunk
    /// in order is what a build waits on, and each thread costs memory.
    pub const MAX_THREADS: usize = 64;

    /// The threads a build renders and counts chunks on: by default one,
    /// the caller's. `threads` is clamped to between 1 and
    /// [`MAX_THREADS`](ContextBuilder::MAX_THREADS) (64). With more than
    /// one, a build with much to render (a cold build, a session's first)
    /// renders and counts batches of about 256 KB of chunks on helper
    /// threads it starts for the build, and never more threads than a batch
    /// has chunks: a build of a few large chunks starts a few helpers
    /// whatever it was given. The result, errors and statistics are the
    /// same whatever the number. Each helper holds the tokenizer's memo of
    /// recent pieces (1.24 MB) while the build runs. The CLI uses the
    /// machine's parallelism, at most 4.
    pub fn threads(&mut self, threads: usize) -> &mut Self {
        self.threads = threads.clamp(1, Self::MAX_THREADS);
        self
    }

    /// The model: picks the encoding and the default `max_tokens`.
    pub fn model(&mut self, model: impl Into<String>) -> &mut Self {
        self.model = model.into();
        self
    }

    /// Counts with `counter` instead of the model's encoding.
    pub fn counter(&mut self, counter: Arc<dyn TokenCounter>) -> &mut Self {
        self.counter = Some(counter);
        self
    }

    /// The factors estimates use (see [`Calibration`]); a clone of the
    /// caller's handle, so what it learns applies to the next build. Exact
    /// counts and a [`counter`](ContextBuilder::counter) ignore it.
    pub fn calibration(&mut self, calibration: Calibration) -> &mut Self {
        self.calibration = calibration;
        self
    }

    /// The prompt budget (default: the model's context window). A value above
    /// the known window is honoured, with a warning.
    pub fn max_tokens(&mut self, max_tokens: usize) -> &mut Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// Tokens held back for the reply.
    pub fn reserve_output(&mut self, tokens: usize) -> &mut Self {
        self.reserve_output = tokens;
        self
    }

    /// Replaces the session's system prompt.
    pub fn system_prompt(&mut self, prompt: impl Into<String>) -> &mut Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// How bodies are escaped.
    pub fn escape(&mut self, mode: EscapeMode) -> &mut Self {
        self.escape = mode;
        self
    }

    /// The format chunks' `content` is written in (default
    /// [`ContentFormat::Gfm`]).
    pub fn content_format(&mut self, format: ContentFormat) -> &mut Self {
        self.content = ContentChoice::Format(format);
        self
    }

    /// Writes chunks' `content` with a renderer of your own (its counts
    /// are not kept in a store: they cannot be keyed).
    pub fn content_renderer(&mut self, renderer: Arc<dyn ContentRenderer>) -> &mut Self {
        self.content = ContentChoice::Custom(renderer);
        self
    }

    /// How message framing is counted.
    pub fn framing(&mut self, framing: Framing) -> &mut Self {
        self.framing = framing;
        self
    }

    /// Keeps only chunks of these kinds.
    pub fn include_kinds(&mut self, kinds: impl IntoIterator<Item = ChunkKind>) -> &mut Self {
        self.include_kinds = Some(kinds.into_iter().collect());
        self
    }

    /// Leaves out chunks of these kinds.
    pub fn exclude_kinds(&mut self, kinds: impl IntoIterator<Item = ChunkKind>) -> &mut Self {
        self.exclude_kinds = kinds.into_iter().collect();
        self
    }

    /// Keeps only the chunks with these ids (each must exist).
    pub fn include_ids<S: Into<String>>(&mut self, ids: impl IntoIterator<Item = S>) -> &mut Self {
        self.include_ids = Some(ids.into_iter().map(Into::into).collect());
        self
    }

    /// Puts `renderer` ahead of the defaults and of earlier custom renderers.
    pub fn register_renderer(&mut self, renderer: Arc<dyn ChunkRenderer>) -> &mut Self {
        self.renderers.register(renderer);
        self
    }

    /// The renderer registry, to register closures or protect extra tags.
    pub fn renderers_mut(&mut self) -> &mut RendererRegistry {
        &mut self.renderers
    }

    /// How the prompt speaks to the provider (default [`Protocol::Text`]).
    /// A [native](Protocol::Native) build sends tool calls and results as
    /// the provider's own structures: read it with a native adapter such as
    /// [`anthropic_request`](crate::adapter::anthropic_request).
    pub fn protocol(&mut self, protocol: Protocol) -> &mut Self {
        self.renderers.set_protocol(protocol);
        self
    }

    /// Makes the history start with a user message, as Anthropic requires:
    /// when it would start with the assistant, a `<history_start/>` user
    /// message (counted like any other) goes first.
    pub fn user_first(&mut self, yes: bool) -> &mut Self {
        self.user_first = yes;
        self
    }

    /// The format the session's fragments render in (default XML).
    pub fn fragments_format(&mut self, format: FragmentFormat) -> &mut Self {
        self.fragments_format = format;
        self
    }

    /// Delimiter and indentation of the fragments' rendering.
    pub fn fragment_options(&mut self, options: FormatOptions) -> &mut Self {
        self.fragment_options = options;
        self
    }

    /// How room is made: caps, priorities, low-water mark, summarizer.
    pub fn policy(&mut self, policy: Policy) -> &mut Self {
        self.policy = policy;
        self
    }

    /// The policy, to change one setting. A [`ContextSession`](crate::ContextSession)
    /// made from this builder builds with it too.
    pub fn policy_mut(&mut self) -> &mut Policy {
        &mut self.policy
    }

    /// Starts loading the tokenizer tables of the model's encoding on
    /// another thread (they load once per process, in about 80 ms), so
    /// that a caller reading its input meanwhile finds them loaded when it
    /// builds. Nothing happens for an estimated model or a custom counter.
    pub fn load_tables_in_background(&self) {
        if let (None, Route::Exact(encoding)) = (&self.counter, route(&self.model)) {
            std::thread::spawn(move || TiktokenCounter::new(encoding).is_ok());
        }
    }

    /// The model builds count for.
    pub(crate) fn model_name(&self) -> &str {
        &self.model
    }

    /// The calibration the builder's estimates use (a shared handle).
    pub(crate) fn calibration_handle(&self) -> &Calibration {
        &self.calibration
    }

    /// The policy builds run with.
    pub(crate) fn current_policy(&self) -> &Policy {
        &self.policy
    }

    /// The cap target `name` stands for with this builder's renderers: a
    /// kind, else a tag of the default table or of a custom renderer;
    /// `tool:NAME` and `id:CHUNK` name a tool and a chunk (see
    /// [`CapTarget::from_name`]).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::UnknownCapTarget`], listing the kinds and tags, when
    /// `name` is neither.
    pub fn cap_target(&self, name: &str) -> Result<CapTarget> {
        CapTarget::from_name(name, &self.cap_tags())
    }

    /// The tags a cap may name: those the default table gives chunks (not
    /// the builder's own markers) and those custom renderers declare.
    fn cap_tags(&self) -> Vec<String> {
        let markers = [ELIDED_TAG, HISTORY_START_TAG, SUMMARY_TAG];
        let mut tags: Vec<String> = DefaultRenderer
            .tags()
            .into_iter()
            .filter(|tag| !markers.contains(&tag.as_str()))
            .collect();
        for tag in self.renderers.custom_tags() {
            if !tags.contains(&tag) {
                tags.push(tag);
            }
        }
        tags
    }

    /// The previous build of this session: its cut is kept while it still
    /// fits (and only ever extended), and `stable_prefix_tokens` reports how
    /// much of the new prompt is byte-identical to it.
    pub fn previous(&mut self, previous: &BuildResult) -> &mut Self {
        self.previous = Some(Arc::new(PreviousBuild::from(previous)));
        self
    }

    /// Forgets the previous build.
    pub fn clear_previous(&mut self) -> &mut Self {
        self.previous = None;
        self
    }

    /// Builds the prompt of `state` and splits off the system prompt, for
    /// callers that send it separately (Anthropic's `system`, say).
    ///
    /// # Errors
    ///
    /// As [`build`](ContextBuilder::build).
    pub fn resolve(&self, state: &MemoryState) -> Result<Resolved> {
        Ok(self.build(state)?.resolved())
    }

    /// Builds the prompt of `state`: [`compile`](ContextBuilder::compile)
    /// and [`ContextConfig::build`] in one call. A caller that builds many
    /// states with the same settings can compile them once.
    ///
    /// # Errors
    ///
    /// * [`ErrorKind::Chunk`] if `state` breaks an invariant (see
    ///   [`MemoryState::validate`]);
    /// * [`ErrorKind::Option`] for an empty model name, an unknown model
    ///   without `max_tokens`, a reserve that leaves no budget, an included
    ///   id that no chunk has, or a low-water mark outside (0, 1];
    /// * [`ErrorKind::Fragment`] or [`ErrorKind::Option`] when the fragments
    ///   cannot be rendered in the chosen format (e.g. a bad indent);
    /// * [`ErrorKind::UnknownCapTarget`] when a cap names a tag that no
    ///   renderer emits;
    /// * [`ErrorKind::CapTooSmall`] when a chunk costs more than its cap even
    ///   with its body cut to nothing (the error names the smallest cap that
    ///   works);
    /// * [`ErrorKind::BudgetExceeded`] when the protected content alone does
    ///   not fit;
    /// * [`ErrorKind::Tokenizer`] if the tokenizer fails to load.
    pub fn build(&self, state: &MemoryState) -> Result<BuildResult> {
        state.validate()?;
        self.compile()?.build_validated(state)
    }

    /// Whether a build under `policy` plans each chunk from what it holds
    /// alone, so a stored chat may be built from its newest chunks (see
    /// `engine::newest`): no filter, custom renderer, summarizer, context
    /// editing, previous build, or cap naming a tool or chunk.
    pub(crate) fn plans_chunks_alone(&self, policy: &Policy, state: &MemoryState) -> bool {
        self.include_kinds.is_none()
            && self.exclude_kinds.is_empty()
            && self.include_ids.is_none()
            && self.renderers.only_default()
            && self.previous.is_none()
            && policy.summarizer().is_none()
            && self.management(policy, state).is_none()
            && !policy.caps.names_tools_or_chunks()
    }

    /// What renders and counts chunks under `policy`.
    pub(crate) fn preparer<'a>(
        &'a self,
        counter: &'a dyn TokenCounter,
        policy: &'a Policy,
    ) -> Preparer<'a> {
        Preparer {
            counter,
            ctx: RenderContext::new(self.escape, self.renderers.tag_set()),
            policy,
            content: self.content.renderer(),
        }
    }

    /// Builds a validated `state` in steps (prepare, plan and assemble,
    /// report) with the `budget` its compiled settings settled, and a
    /// pass's policy, previous build and cache.
    fn run(&self, state: &MemoryState, budget: Budget, mut pass: Pass<'_>) -> Result<BuildResult> {
        let counter = budget.counter.as_ref();
        let preparer = self.preparer(counter, pass.policy);
        let system = self.system_parts(state, &preparer.ctx, counter)?;
        let prepared = self.prepare(state, &preparer, budget.available, system, &mut pass)?;
        let assembled = self.plan_and_assemble(state, &preparer, &budget, prepared, &mut pass)?;
        Ok(self.report(budget, assembled, pass.previous))
    }

    /// Renders and counts the history, groups it into units and lays out
    /// the ladder of cuts; `system` is the system prompt and fragments,
    /// which the system-role chunks join.
    fn prepare<'s>(
        &self,
        state: &'s MemoryState,
        preparer: &Preparer<'_>,
        available: usize,
        mut system: Vec<Arc<CountedText>>,
        pass: &mut Pass<'_>,
    ) -> Result<Prepared<'s>> {
        let previous_cut = pass.previous.map(|p| &p.cut);
        let mut history =
            self.prepare_history(state, preparer, available, previous_cut, pass.cache)?;
        system.extend(std::mem::take(&mut history.system_parts));
        let edited = match self.management(pass.policy, state) {
            Some(management) => {
                if !all_start_clean(&history.items) {
                    // Measuring then counts joined text: every part needs its text.
                    let open = |_| None;
                    self.settle_texts(state, &mut history.items, open, preparer, pass.cache)?;
                }
                let measure = Measure {
                    preparer,
                    system: &system,
                    available,
                };
                self.edit(management, state, &mut history, &measure, pass.cache)
            }
            None => Edited::default(),
        };
        let units = group_units(&mut history.items, &state.chunks, &mut history.calls);
        let id_of = |chunk: usize| &history.decisions[chunk].id;
        let (steps, sticky) =
            plan_steps(&history.items, &units, (id_of, previous_cut), &edited.steps);
        if !all_start_clean(&history.items) {
            // The planner will count joined text of whatever the previous
            // cut leaves in: every such chunk needs its text.
            // What that cut keeps may still be stubbed: its fate is open.
            let fates = fates_after(&steps[..sticky], &units, history.items.len());
            self.settle_texts(
                state,
                &mut history.items,
                |i| (fates[i] != Fate::Kept).then_some(fates[i]),
                preparer,
                pass.cache,
            )?;
        }
        Ok(Prepared {
            history,
            ladder: Ladder {
                units,
                steps,
                sticky,
            },
            system,
            edited,
        })
    }

    /// Plans the cut (and summarizes what it elides), settles the texts the
    /// prompt shows, records each chunk's fate and assembles the messages.
    fn plan_and_assemble(
        &self,
        state: &MemoryState,
        preparer: &Preparer<'_>,
        budget: &Budget,
        prepared: Prepared<'_>,
        pass: &mut Pass<'_>,
    ) -> Result<Assembled> {
        let Prepared {
            mut history,
            ladder,
            system,
            edited,
        } = prepared;
        let base = self.planner(budget.available, preparer, &system, &ladder, history.frozen);
        let base = pass.outside.planned_by(base, &history.items);
        let mut layout = self
            .plan_fitting(&base, &mut history, state, preparer)
            .map_err(|required| self.over_budget(required, budget))?;
        let mut warnings = Vec::new();
        let summary = {
            let planner = Planner {
                items: &history.items,
                ..base.clone()
            };
            let previous = pass.previous.and_then(|p| p.summary.as_ref());
            summarize(
                &planner,
                &mut layout,
                (state, preparer),
                previous,
                &mut warnings,
            )
        };
        // The prompt holds the text of what was kept or stubbed, and only that.
        self.settle_texts(
            state,
            &mut history.items,
            |i| Some(layout.fates[i]),
            preparer,
            pass.cache,
        )?;
        let mut decisions = history.decisions;
        record_fates(&mut decisions, &history.items, &layout);
        for &i in &edited.cleared {
            if let Decision::Stubbed { reason, .. } =
                &mut decisions[history.items[i].chunk].decision
            {
                *reason = StubReason::ClearToolUses;
            }
        }
        let planner = Planner {
            items: &history.items,
            ..base
        };
        let assembly = assemble(&planner, &layout, &history.system_chunks, |chunk| {
            decisions[chunk].id.clone()
        });
        // The planning state of a long session is as large as the report:
        // let it go before the report is made.
        let (total, elision, trim_target) = (layout.total, layout.elision, layout.trim_target);
        drop(planner);
        drop((layout, ladder, history.items, system));
        Ok(Assembled {
            assembly,
            decisions,
            total,
            elision,
            trim_target,
            summary,
            applied_edits: edited.applied,
            warnings,
        })
    }

    /// The error of a build whose protected content needs `required` tokens.
    fn over_budget(&self, required: usize, budget: &Budget) -> crate::Error {
        ErrorKind::BudgetExceeded {
            required,
            available: budget.available,
            max_tokens: budget.max_tokens,
            reserve_output: self.reserve_output,
        }
        .into()
    }

    /// The counter this build counts with: the caller's, else the model's
    /// (an estimate at its calibrated factor when the model has no public
    /// tokenizer).
    pub(super) fn counter_in_use(&self) -> Result<Arc<dyn TokenCounter>> {
        match &self.counter {
            Some(counter) => Ok(Arc::clone(counter)),
            None => counter_for_model_calibrated(&self.model, &self.calibration),
        }
    }

    /// The planner of this build, before it is given the items.
    fn planner<'p>(
        &self,
        available: usize,
        preparer: &Preparer<'p>,
        system: &'p [Arc<CountedText>],
        ladder: &'p Ladder,
        frozen: (usize, usize),
    ) -> Planner<'p> {
        let counter = preparer.counter;
        Planner {
            counter,
            framing: framing_table(self.framing, counter),
            priming: self.framing.priming(),
            system,
            items: &[],
            units: &ladder.units,
            steps: &ladder.steps,
            sticky: ladder.sticky,
            user_first: self.user_first,
            available,
            low_water: preparer.policy.low_water,
            frozen,
            marker_at: None,
            history_start: CountedText::new(
                history_note(self.renderers.protocol(), format!("<{HISTORY_START_TAG}/>")),
                counter,
            ),
            protocol: self.renderers.protocol(),
        }
    }

    /// The build's result: the assembled messages with their fingerprints
    /// and what they share with the previous build, and what became of
    /// each chunk.
    fn report(
        &self,
        mut budget: Budget,
        assembled: Assembled,
        previous: Option<&PreviousBuild>,
    ) -> BuildResult {
        let Assembled {
            assembly:
                Assembly {
                    messages,
                    growable: growable_prefix_tokens,
                    last_part,
                },
            decisions,
            total,
            elision,
            trim_target,
            summary,
            applied_edits,
            warnings,
        } = assembled;
        budget.warnings.extend(warnings);
        let messages: Rows<ContextMessage> = messages.into();
        let fingerprints = fingerprints(&messages, &growable_prefix_tokens);
        let stable_prefix_tokens =
            previous.map(|p| p.stable_prefix_tokens(&messages, &fingerprints));
        let included = included(&messages);
        let excluded = decisions
            .iter()
            .filter(|d| !d.is_included())
            .map(|d| d.id.clone())
            .collect();
        let truncated = decisions.iter().filter_map(Truncation::of).collect();
        BuildResult {
            model: self.model.clone(),
            encoding: budget.counter.encoding_name().to_owned(),
            budget: budget.available,
            max_tokens: budget.max_tokens,
            reserve_output: self.reserve_output,
            token_count: total,
            token_count_exact: budget.counter.is_exact()
                && self.renderers.protocol() == Protocol::Text,
            messages,
            included,
            excluded,
            truncated,
            elided: elision,
            trim_target,
            stable_prefix_tokens,
            fingerprints,
            summary,
            last_part,
            protocol: self.renderers.protocol(),
            decisions: decisions.into(),
            unread_chunks: 0,
            applied_edits,
            warnings: budget.warnings,
        }
    }

    /// The system prompt and fragments, in the order they open the system message.
    fn system_parts(
        &self,
        state: &MemoryState,
        ctx: &RenderContext<'_>,
        counter: &dyn TokenCounter,
    ) -> Result<Vec<Arc<CountedText>>> {
        let mut system = Vec::new();
        let prompt = self
            .system_prompt
            .as_deref()
            .or(state.system_prompt.as_deref());
        if let Some(prompt) = prompt.filter(|p| !p.is_empty()) {
            system.push(Arc::new(CountedText::new(
                self.system_prompt_text(prompt, ctx),
                counter,
            )));
        }
        if !state.fragments.is_empty() {
            let rendered = render_fragments(
                &state.fragments,
                self.fragments_format,
                &self.fragment_options,
            )?;
            let text = self.fragments_text(rendered);
            if !text.is_empty() {
                system.push(Arc::new(CountedText::new(text, counter)));
            }
        }
        Ok(system)
    }

    /// `(max_tokens, available)` for this build.
    fn budget(&self, warnings: &mut Vec<String>) -> Result<(usize, usize)> {
        let window = model_info(&self.model).map(|m| m.context_window);
        let max_tokens = match (self.max_tokens, window) {
            (Some(max), Some(window)) if max > window => {
                warnings.push(format!(
                    "max_tokens {max} is above the {window}-token context window of {}",
                    self.model
                ));
                max
            }
            (Some(max), _) => max,
            (None, Some(window)) => window,
            (None, None) => {
                return Err(ErrorKind::Option {
                    option: "max_tokens".into(),
                    message: format!(
                        "the context window of model {:?} is unknown; set max_tokens",
                        self.model
                    ),
                }
                .into());
            }
        };
        if max_tokens == 0 {
            return Err(ErrorKind::Option {
                option: "max_tokens".into(),
                message: "max_tokens must be at least 1".into(),
            }
            .into());
        }
        if self.reserve_output >= max_tokens {
            return Err(ErrorKind::Option {
                option: "reserve_output".into(),
                message: format!(
                    "reserve_output {} leaves no room in max_tokens {max_tokens}: lower \
                     reserve_output or raise max_tokens",
                    self.reserve_output
                ),
            }
            .into());
        }
        Ok((max_tokens, max_tokens - self.reserve_output))
    }

    fn check_included_ids(&self, state: &MemoryState) -> Result<()> {
        let Some(ids) = &self.include_ids else {
            return Ok(());
        };
        let known: FxHashSet<&str> = state.chunks.iter().map(|c| c.id.as_str()).collect();
        match ids.iter().find(|id| !known.contains(id.as_str())) {
            Some(missing) => Err(ErrorKind::Option {
                option: "include_ids".into(),
                message: format!("no chunk has id {missing:?}"),
            }
            .into()),
            None => Ok(()),
        }
    }

    /// Fragments are data, not instructions: whatever their format, a key or
    /// value must not open or close a message tag, so structural escaping
    /// applies to them in every mode but `none` (it keeps XML well formed,
    /// turning such an element into text); `xml` mode escapes the text
    /// formats in full, like any body.
    fn fragments_text(&self, rendered: String) -> String {
        let mode = match (self.escape, self.fragments_format) {
            (EscapeMode::None, _) => return rendered,
            (EscapeMode::Xml, format) if format != FragmentFormat::Xml => EscapeMode::Xml,
            _ => EscapeMode::Structural,
        };
        let mut out = String::with_capacity(rendered.len());
        self.renderers.context(mode).write_body(&mut out, &rendered);
        out
    }

    /// The system prompt is the caller's own instructions, kept raw except in
    /// `xml` mode, whose promise is that every message parses.
    fn system_prompt_text(&self, prompt: &str, ctx: &RenderContext<'_>) -> String {
        if self.escape == EscapeMode::Xml {
            let mut out = String::with_capacity(prompt.len());
            ctx.write_body(&mut out, prompt);
            out
        } else {
            prompt.to_owned()
        }
    }
}
