//! [`ContextConfig`]: a builder's settings checked and settled once, which
//! builds then only read.

use std::sync::Arc;

use super::{Budget, Carry, ContextBuilder, DEFAULT_MODEL, Outside, Pass};
use crate::budget::Policy;
use crate::chunk_cache::ChunkCache;
use crate::error::{ErrorKind, Result};
use crate::memory::MemoryState;
use crate::message::{BuildResult, Resolved};
use crate::previous::PreviousBuild;
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
/// assert_eq!(result.included, ["u1"]);
/// # Ok::<(), agent_context::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct ContextConfig {
    settings: Arc<ContextBuilder>,
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
        if self.model.is_empty() {
            return Err(ErrorKind::Option {
                option: "model".into(),
                message: format!("the model name is empty; name one, e.g. {DEFAULT_MODEL:?}"),
            }
            .into());
        }
        let counter = self.counter_in_use()?;
        let counting = if self.counter.is_none() && !counter.is_exact() {
            Counting::Calibrated
        } else {
            Counting::Fixed(counter)
        };
        let mut warnings = Vec::new();
        let (max_tokens, available) = self.budget(&mut warnings)?;
        Ok(ContextConfig {
            settings: Arc::new(self.clone()),
            counting,
            max_tokens,
            available,
            warnings,
        })
    }
}

impl ContextConfig {
    /// The settings this was compiled from.
    pub fn settings(&self) -> &ContextBuilder {
        &self.settings
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
            Counting::Calibrated => self.settings.counter_in_use(),
        }
    }

    /// The policy of the settings: not compiled (builds check the policy
    /// they run with), so a session may change it in place.
    pub(crate) fn policy_mut(&mut self) -> &mut Policy {
        Arc::make_mut(&mut self.settings).policy_mut()
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
        state.validate()?;
        self.build_validated(state)
    }

    /// [`build`](ContextConfig::build) of a `state` already validated.
    pub(super) fn build_validated(&self, state: &MemoryState) -> Result<BuildResult> {
        let pass = Pass {
            policy: &self.settings.policy,
            previous: self.settings.previous.as_deref(),
            cache: &mut ChunkCache::default(),
            outside: Outside::default(),
        };
        self.build_with(state, pass)
    }

    /// Builds the prompt of `state` and splits off the system prompt (see
    /// [`ContextBuilder::resolve`]).
    ///
    /// # Errors
    ///
    /// As [`build`](ContextConfig::build).
    pub fn resolve(&self, state: &MemoryState) -> Result<Resolved> {
        Ok(self.build(state)?.resolved())
    }

    /// The turn of a session that only appended chunks, built from its
    /// last build (see [`ContextBuilder::extend`]).
    pub(crate) fn extend(
        &self,
        state: &MemoryState,
        policy: &Policy,
        carry: &mut Carry,
        previous: &mut PreviousBuild,
        cache: &mut ChunkCache,
    ) -> Result<Option<BuildResult>> {
        let counter = self.counter()?;
        (self.settings).extend(state, policy, &counter, carry, previous, cache)
    }

    /// Builds a validated `state` with a pass's policy, previous build and
    /// cache, in steps: budget, prepare, plan and assemble, report.
    pub(crate) fn build_with(
        &self,
        state: &MemoryState,
        mut pass: Pass<'_>,
    ) -> Result<BuildResult> {
        let budget = self.budget_for(state, &mut pass)?;
        self.settings.run(state, budget, pass)
    }

    /// Checks the pass's policy and the settings against `state`, and
    /// settles the counter (which a session's cache counts with) and the
    /// build's warnings.
    fn budget_for(&self, state: &MemoryState, pass: &mut Pass<'_>) -> Result<Budget> {
        let settings = &*self.settings;
        pass.policy.validate()?;
        let counter = self.counter()?;
        pass.cache.count_with(counter.encoding_name());
        let mut warnings = self.warnings.clone();
        let has_chunk = |id: &str| state.chunks.iter().any(|c| c.id == id);
        let has_tool = |tool: &str| state.chunks.iter().any(|c| c.tool.as_deref() == Some(tool));
        let caps = &pass.policy.caps;
        warnings.extend(caps.check(|| settings.cap_tags(), has_chunk, has_tool)?);
        if settings.counter.is_none() {
            warnings.extend(estimate_warning(&settings.model, counter.as_ref()));
        }
        settings.check_included_ids(state)?;
        Ok(Budget {
            counter,
            max_tokens: self.max_tokens,
            available: self.available,
            warnings,
        })
    }
}
