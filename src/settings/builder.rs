//! [`ContextBuilder`]: the settings' setters, and the previous build a one-shot
//! build extends; builds read the [`Settings`] it holds.

use std::sync::Arc;

use super::{ContentChoice, Settings};
use crate::budget::{CapTarget, Policy};
use crate::content::{ContentFormat, ContentRenderer};
use crate::error::Result;
use crate::format::{FormatOptions, FragmentFormat};
use crate::model::memory::MemoryState;
use crate::model::roles::ChunkKind;
use crate::output::last_build::LastBuild;
use crate::output::result::BuildResult;
use crate::render::{ChunkRenderer, EscapeMode, Protocol, RendererRegistry};
use crate::tokens::{Calibration, Framing, Route, TiktokenCounter, TokenCounter, route};

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
    /// What builds read: everything but the previous build.
    pub(crate) settings: Settings,
    /// A previous build, which the next one-shot build extends (see
    /// [`previous`](ContextBuilder::previous)): input to a build, not a
    /// setting.
    pub(crate) previous: Option<Arc<LastBuild>>,
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
            settings: Settings::new(),
            previous: None,
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
        self.settings.threads = threads.clamp(1, Self::MAX_THREADS);
        self
    }

    /// The model: picks the encoding and the default `max_tokens`.
    pub fn model(&mut self, model: impl Into<String>) -> &mut Self {
        self.settings.model = model.into();
        self
    }

    /// Counts with `counter` instead of the model's encoding.
    pub fn counter(&mut self, counter: Arc<dyn TokenCounter>) -> &mut Self {
        self.settings.counter = Some(counter);
        self
    }

    /// The factors estimates use (see [`Calibration`]); a clone of the
    /// caller's handle, so what it learns applies to the next build. Exact
    /// counts and a [`counter`](ContextBuilder::counter) ignore it.
    pub fn calibration(&mut self, calibration: Calibration) -> &mut Self {
        self.settings.calibration = calibration;
        self
    }

    /// The prompt budget (default: the model's context window). A value above
    /// the known window is honoured, with a warning.
    pub fn max_tokens(&mut self, max_tokens: usize) -> &mut Self {
        self.settings.max_tokens = Some(max_tokens);
        self
    }

    /// Tokens held back for the reply.
    pub fn reserve_output(&mut self, tokens: usize) -> &mut Self {
        self.settings.reserve_output = tokens;
        self
    }

    /// Replaces the session's system prompt.
    pub fn system_prompt(&mut self, prompt: impl Into<String>) -> &mut Self {
        self.settings.system_prompt = Some(prompt.into());
        self
    }

    /// How bodies are escaped.
    pub fn escape(&mut self, mode: EscapeMode) -> &mut Self {
        self.settings.escape = mode;
        self
    }

    /// The format chunks' `content` is written in (default
    /// [`ContentFormat::Gfm`]).
    pub fn content_format(&mut self, format: ContentFormat) -> &mut Self {
        self.settings.content = ContentChoice::Format(format);
        self
    }

    /// Writes chunks' `content` with a renderer of your own (its counts
    /// are not kept in a store: they cannot be keyed).
    pub fn content_renderer(&mut self, renderer: Arc<dyn ContentRenderer>) -> &mut Self {
        self.settings.content = ContentChoice::Custom(renderer);
        self
    }

    /// How message framing is counted.
    pub fn framing(&mut self, framing: Framing) -> &mut Self {
        self.settings.framing = framing;
        self
    }

    /// Keeps only chunks of these kinds.
    pub fn include_kinds(&mut self, kinds: impl IntoIterator<Item = ChunkKind>) -> &mut Self {
        self.settings.include_kinds = Some(kinds.into_iter().collect());
        self
    }

    /// Leaves out chunks of these kinds.
    pub fn exclude_kinds(&mut self, kinds: impl IntoIterator<Item = ChunkKind>) -> &mut Self {
        self.settings.exclude_kinds = kinds.into_iter().collect();
        self
    }

    /// Keeps only the chunks with these ids (each must exist).
    pub fn include_ids<S: Into<String>>(&mut self, ids: impl IntoIterator<Item = S>) -> &mut Self {
        self.settings.include_ids = Some(ids.into_iter().map(Into::into).collect());
        self
    }

    /// Puts `renderer` ahead of the defaults and of earlier custom renderers.
    pub fn register_renderer(&mut self, renderer: Arc<dyn ChunkRenderer>) -> &mut Self {
        self.settings.renderers.register(renderer);
        self
    }

    /// The renderer registry, to register closures or protect extra tags.
    pub fn renderers_mut(&mut self) -> &mut RendererRegistry {
        &mut self.settings.renderers
    }

    /// How the prompt speaks to the provider (default [`Protocol::Text`]).
    /// A [native](Protocol::Native) build sends tool calls and results as
    /// the provider's own structures: read it with a native adapter such as
    /// [`anthropic_request`](crate::adapter::anthropic_request).
    pub fn protocol(&mut self, protocol: Protocol) -> &mut Self {
        self.settings.renderers.set_protocol(protocol);
        self
    }

    /// Makes the history start with a user message, as Anthropic requires:
    /// when it would start with the assistant, a `<history_start/>` user
    /// message (counted like any other) goes first.
    pub fn user_first(&mut self, yes: bool) -> &mut Self {
        self.settings.user_first = yes;
        self
    }

    /// The format the session's fragments render in (default XML).
    pub fn fragments_format(&mut self, format: FragmentFormat) -> &mut Self {
        self.settings.fragments_format = format;
        self
    }

    /// Delimiter and indentation of the fragments' rendering.
    pub fn fragment_options(&mut self, options: FormatOptions) -> &mut Self {
        self.settings.fragment_options = options;
        self
    }

    /// How room is made: caps, priorities, low-water mark, summarizer.
    pub fn policy(&mut self, policy: Policy) -> &mut Self {
        self.settings.policy = policy;
        self
    }

    /// The policy, to change one setting. A [`ContextSession`](crate::ContextSession)
    /// made from this builder builds with it too.
    pub fn policy_mut(&mut self) -> &mut Policy {
        &mut self.settings.policy
    }

    /// Starts loading the tokenizer tables of the model's encoding on
    /// another thread (they load once per process, in about 80 ms), so
    /// that a caller reading its input meanwhile finds them loaded when it
    /// builds. Nothing happens for an estimated model or a custom counter,
    /// or once the tables started loading.
    pub fn load_tables_in_background(&self) {
        if let (None, Route::Exact(encoding)) =
            (&self.settings.counter, route(&self.settings.model))
        {
            TiktokenCounter::load_in_background(encoding);
        }
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
        CapTarget::from_name(name, &self.settings.cap_tags())
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

    /// Whether a build plans each chunk from what it holds alone (see
    /// [`Settings::plans_chunks_alone`]), with no previous build.
    pub(crate) fn plans_chunks_alone(&self, policy: &Policy, state: &MemoryState) -> bool {
        self.previous.is_none() && self.settings.plans_chunks_alone(policy, state)
    }
}
