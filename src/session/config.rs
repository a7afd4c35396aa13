//! [`ContextConfig`]: a builder's settings checked and settled once, which
//! builds then only read.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rustc_hash::FxHashSet;

use crate::budget::Policy;
use crate::error::{ErrorKind, Result};
use crate::model::memory::MemoryState;
use crate::output::last_build::LastBuild;
use crate::output::result::BuildResult;
use crate::pipeline::{Budget, Build, BuildCache, Outside, Pass, only_renders};
use crate::settings::Settings;
use crate::settings::builder::{ContextBuilder, DEFAULT_MODEL};
use crate::tokens::{TokenCounter, estimate_warning};

/// A [`ContextBuilder`]'s settings, checked once and settled: the model
/// named, the counter loaded, the budget worked out from the model's
/// window, `max_tokens` and `reserve_output`, with the warnings they give.
/// Immutable, cheap to clone and to share between threads; builds only
/// read it. Each build works in a cache its caller owns: a one-shot
/// [`build`](ContextConfig::build) in a fresh one, a
/// [`ContextSession`](crate::ContextSession) in the one it keeps.
///
/// Two things stay per build, by design: an estimate reads its
/// [`Calibration`](crate::tokens::Calibration)'s factor at each build (what
/// usage taught it applies to the next one), and the policy is checked
/// with the chunks (a session's turn may pass its own). What depends on the
/// session, such as `include_ids` naming chunks it has, is checked against
/// each state.
///
/// ```
/// use agent_context::{ContextBuilder, MemoryChunk, MemoryState, Role};
///
/// let config = ContextBuilder::new().model("gpt-4o").max_tokens(8_000).compile()?;
/// assert_eq!(config.budget(), 8_000);
/// let state = MemoryState::new().with_chunk(MemoryChunk::agent("u1", Role::User, "Hi."));
/// let result = config.build(&state)?;
/// assert_eq!(result.included().collect::<Vec<_>>(), ["u1"]);
/// # Ok::<(), agent_context::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct ContextConfig {
    /// The builder compiled: its settings, which builds read, and its
    /// previous build, which a one-shot build extends.
    builder: Arc<ContextBuilder>,
    /// Unique to this compilation: a [`BuildCache`] filled under other
    /// settings is cleared before it serves these.
    id: u64,
    counting: Counting,
    max_tokens: usize,
    available: usize,
    /// What the settings alone warn of (a budget above the window).
    warnings: Vec<String>,
}

/// How a build gets its counter.
#[derive(Debug, Clone)]
enum Counting {
    /// Loaded once: the caller's counter, or the model's exact encoding.
    Fixed(Arc<dyn TokenCounter>),
    /// An estimate at the factor the calibration holds when a build runs.
    Calibrated,
}

impl ContextBuilder {
    /// These settings checked and settled (see [`ContextConfig`]).
    ///
    /// # Errors
    ///
    /// * [`ErrorKind::Option`] for an empty model name, an unknown model
    ///   without `max_tokens`, a `max_tokens` of 0 or a reserve that leaves
    ///   no budget;
    /// * [`ErrorKind::Tokenizer`] if the tokenizer fails to load.
    pub fn compile(&self) -> Result<ContextConfig> {
        let settings = &self.settings;
        if settings.model.is_empty() {
            return Err(ErrorKind::Option {
                option: "model".into(),
                message: format!("the model name is empty; name one, e.g. {DEFAULT_MODEL:?}"),
            }
            .into());
        }
        let counter = settings.counter_in_use()?;
        let counting = if settings.counter.is_none() && !counter.is_exact() {
            Counting::Calibrated
        } else {
            Counting::Fixed(counter)
        };
        let mut warnings = Vec::new();
        let (max_tokens, available) = settings.budget(&mut warnings)?;
        static COMPILED: AtomicU64 = AtomicU64::new(0);
        Ok(ContextConfig {
            builder: Arc::new(self.clone()),
            id: COMPILED.fetch_add(1, Ordering::Relaxed),
            counting,
            max_tokens,
            available,
            warnings,
        })
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
}

impl ContextConfig {
    /// The settings this was compiled from.
    pub fn settings(&self) -> &ContextBuilder {
        &self.builder
    }

    /// What builds read of the settings.
    pub(crate) fn build_settings(&self) -> &Settings {
        &self.builder.settings
    }

    /// The prompt budget: `max_tokens - reserve_output`.
    pub fn budget(&self) -> usize {
        self.available
    }

    /// `max_tokens`, as set or from the model's window.
    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// The counter builds count with now (an estimate's factor may rise
    /// as its calibration learns).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Option`] if a calibrated factor is out of range.
    pub fn counter(&self) -> Result<Arc<dyn TokenCounter>> {
        match &self.counting {
            Counting::Fixed(counter) => Ok(Arc::clone(counter)),
            Counting::Calibrated => self.build_settings().counter_in_use(),
        }
    }

    /// The policy of the settings: not compiled (builds check the policy
    /// they run with), so a session may change it in place.
    pub(crate) fn policy_mut(&mut self) -> &mut Policy {
        Arc::make_mut(&mut self.builder).policy_mut()
    }

    /// Builds the prompt of `state` with the settings' policy and previous
    /// build, in a fresh cache.
    ///
    /// # Errors
    ///
    /// As [`ContextBuilder::build`], less what [`compile`] checked.
    ///
    /// [`compile`]: ContextBuilder::compile
    pub fn build(&self, state: &MemoryState) -> Result<BuildResult> {
        self.build_in(state, &mut BuildCache::new())
    }

    /// [`build`](ContextConfig::build) in `cache`, which keeps each chunk
    /// rendered and counted for the next build of the same chunks: a
    /// caller that builds a growing state turn after turn renders only the
    /// new chunks. The cache knows a chunk by its position and id (see
    /// [`BuildCache`] for what that asks of the caller); it is cleared when
    /// it was filled under other settings. A [`ContextSession`] holds one,
    /// and keeps it in step with its chunks for the caller.
    ///
    /// # Errors
    ///
    /// As [`build`](ContextConfig::build).
    ///
    /// [`ContextSession`]: crate::ContextSession
    pub fn build_in(&self, state: &MemoryState, cache: &mut BuildCache) -> Result<BuildResult> {
        state.validate()?;
        cache.start_build(state.chunks.capacity());
        cache.follow(state, (self.id, &self.build_settings().renderers));
        let pass = Pass {
            policy: &self.build_settings().policy,
            previous: self.builder.previous.as_deref(),
            cache,
            outside: Outside::default(),
        };
        self.build_with(state, pass)
    }

    /// [`build`](ContextConfig::build) of a `state` already validated.
    pub(crate) fn build_validated(&self, state: &MemoryState) -> Result<BuildResult> {
        let pass = Pass {
            policy: &self.build_settings().policy,
            previous: self.builder.previous.as_deref(),
            cache: &mut BuildCache::new(),
            outside: Outside::default(),
        };
        self.build_with(state, pass)
    }

    /// The turn of a session that only appended chunks, built from its
    /// `last` build (see `pipeline::extend`), with the pass's policy and
    /// cache.
    pub(crate) fn extend(
        &self,
        state: &MemoryState,
        pass: Pass<'_>,
        last: &mut LastBuild,
    ) -> Result<Option<BuildResult>> {
        let counter = self.counter()?;
        let budget = Budget {
            max_tokens: last.result.max_tokens,
            available: last.result.budget,
            warnings: Vec::new(),
        };
        Build::new(
            self.build_settings(),
            state,
            (counter.as_ref(), budget),
            pass,
        )
        .extend(last)
    }

    /// The counts a store keeps of the chunks of `state` at `indices`, from
    /// `cache` or rendered and counted into it (see `pipeline::stored`).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Tokenizer`] if the tokenizer fails to load.
    pub(crate) fn counts_to_keep(
        &self,
        state: &MemoryState,
        indices: impl ExactSizeIterator<Item = usize>,
        cache: &mut BuildCache,
    ) -> Result<Vec<Option<String>>> {
        let counter = self.counter()?;
        only_renders(self.build_settings(), state, counter.as_ref(), cache).counts_to_keep(indices)
    }

    /// Builds a validated `state` with a pass's policy, previous build and
    /// cache, in stages: prepare, plan, assemble, report.
    pub(crate) fn build_with(
        &self,
        state: &MemoryState,
        mut pass: Pass<'_>,
    ) -> Result<BuildResult> {
        let counter = self.counter()?;
        let budget = self.budget_for(state, &mut pass, counter.as_ref())?;
        Build::new(
            self.build_settings(),
            state,
            (counter.as_ref(), budget),
            pass,
        )
        .run()
    }

    /// Checks the pass's policy and the settings against `state`, and
    /// settles the counter (which a session's cache counts with) and the
    /// build's warnings.
    fn budget_for(
        &self,
        state: &MemoryState,
        pass: &mut Pass<'_>,
        counter: &dyn TokenCounter,
    ) -> Result<Budget> {
        let settings = self.build_settings();
        pass.policy.validate()?;
        pass.cache.count_with(counter.encoding_name());
        let mut warnings = self.warnings.clone();
        let has_chunk = |id: &str| state.chunks.iter().any(|c| c.id == id);
        // The session's tools, gathered once when a cap or an edit names
        // one (an edit may name thousands).
        let tools = std::cell::OnceCell::new();
        let has_tool = |tool: &str| {
            tools
                .get_or_init(|| {
                    let named = state.chunks.iter().filter_map(|c| c.tool.as_deref());
                    named.collect::<FxHashSet<&str>>()
                })
                .contains(tool)
        };
        let caps = &pass.policy.caps;
        warnings.extend(caps.check(|| settings.cap_tags(), has_chunk, has_tool)?);
        if let Some(management) = pass.policy.management_of(state) {
            warnings.extend(management.unknown_tool_warnings(has_tool));
        }
        if settings.counter.is_none() {
            warnings.extend(estimate_warning(&settings.model, counter));
        }
        settings.check_included_ids(state)?;
        Ok(Budget {
            max_tokens: self.max_tokens,
            available: self.available,
            warnings,
        })
    }
}
