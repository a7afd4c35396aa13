//! [`ContextBuilder`]: one session in, budgeted messages out.

use std::sync::Arc;

use rustc_hash::FxHashSet;

use crate::budget::{CapTarget, ELIDED_TAG, HISTORY_START_TAG, Policy, SUMMARY_TAG};
use crate::content::{ContentFormat, ContentRenderer};
use crate::error::Result;
use crate::format::{FormatOptions, FragmentFormat};
use crate::model::memory::{MemoryChunk, MemoryState};
use crate::model::roles::ChunkKind;
use crate::output::last_build::LastBuild;
use crate::output::result::BuildResult;
use crate::render::{ChunkRenderer, DefaultRenderer, EscapeMode, Protocol, RendererRegistry};
use crate::tokens::{
    Calibration, Framing, Route, TiktokenCounter, TokenCounter, counter_for_model_calibrated, route,
};

/// How chunks' `content` is written: a built-in format, or a caller's
/// renderer.
#[derive(Clone)]
pub(crate) enum ContentChoice {
    Format(ContentFormat),
    Custom(Arc<dyn ContentRenderer>),
}

impl ContentChoice {
    pub(crate) fn renderer(&self) -> &dyn ContentRenderer {
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
/// immutable [`ContextConfig`](crate::ContextConfig) builds read, and in
/// [`build`](ContextBuilder::build), which compiles first.
#[derive(Debug, Clone)]
pub struct ContextBuilder {
    pub(crate) model: String,
    pub(crate) counter: Option<Arc<dyn TokenCounter>>,
    pub(crate) calibration: Calibration,
    pub(crate) max_tokens: Option<usize>,
    pub(crate) reserve_output: usize,
    pub(crate) system_prompt: Option<String>,
    pub(crate) escape: EscapeMode,
    pub(crate) framing: Framing,
    pub(crate) include_kinds: Option<Vec<ChunkKind>>,
    pub(crate) exclude_kinds: Vec<ChunkKind>,
    pub(crate) include_ids: Option<Vec<String>>,
    pub(crate) renderers: RendererRegistry,
    pub(crate) content: ContentChoice,
    pub(crate) user_first: bool,
    pub(crate) fragments_format: FragmentFormat,
    pub(crate) fragment_options: FormatOptions,
    pub(crate) policy: Policy,
    pub(crate) previous: Option<Arc<LastBuild>>,
    pub(crate) threads: usize,
}

impl Default for ContextBuilder {
    fn default() -> Self {
        ContextBuilder::new()
    }
}

impl ContextBuilder {
    /// A builder for the default model (`gpt-4o`) with the model's whole window as budget.
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
    /// builds. Nothing happens for an estimated model or a custom counter,
    /// or once the tables started loading.
    pub fn load_tables_in_background(&self) {
        if let (None, Route::Exact(encoding)) = (&self.counter, route(&self.model)) {
            TiktokenCounter::load_in_background(encoding);
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
    /// [`ErrorKind::UnknownCapTarget`](crate::ErrorKind::UnknownCapTarget), listing the kinds and tags, when
    /// `name` is neither.
    pub fn cap_target(&self, name: &str) -> Result<CapTarget> {
        CapTarget::from_name(name, &self.cap_tags())
    }

    /// The tags a cap may name: those the default table gives chunks (not
    /// the builder's own markers) and those custom renderers declare.
    pub(crate) fn cap_tags(&self) -> Vec<String> {
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
        self.previous = Some(Arc::new(LastBuild::from(previous)));
        self
    }

    /// Forgets the previous build.
    pub fn clear_previous(&mut self) -> &mut Self {
        self.previous = None;
        self
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
            && policy.context_management.is_none()
            && state.context_management.is_none()
            && !policy.caps.names_tools_or_chunks()
    }

    /// The ids `include_ids` keeps, when set.
    pub(crate) fn only_ids(&self) -> Option<FxHashSet<&str>> {
        self.include_ids
            .as_ref()
            .map(|ids| ids.iter().map(String::as_str).collect())
    }

    /// Whether the filters keep `chunk` (`only_ids` as
    /// [`only_ids`](ContextBuilder::only_ids) gives it).
    pub(crate) fn selects(&self, chunk: &MemoryChunk, only_ids: Option<&FxHashSet<&str>>) -> bool {
        self.include_kinds
            .as_ref()
            .is_none_or(|kinds| kinds.contains(&chunk.kind))
            && !self.exclude_kinds.contains(&chunk.kind)
            && only_ids.is_none_or(|ids| ids.contains(chunk.id.as_str()))
    }

    /// The counter these settings count with: the caller's, else the model's
    /// (an estimate at its calibrated factor when the model has no public
    /// tokenizer).
    pub(crate) fn counter_in_use(&self) -> Result<Arc<dyn TokenCounter>> {
        match &self.counter {
            Some(counter) => Ok(Arc::clone(counter)),
            None => counter_for_model_calibrated(&self.model, &self.calibration),
        }
    }
}
