//! A session a binding builds in whatever output each turn asks for.
//!
//! Outputs that build alike share a builder; one that builds otherwise
//! (Anthropic's need the history to start with the user, native ones their
//! protocol, Anthropic's native one a default reserve) compiles the session
//! for it, which starts its cache afresh. A compaction is planned and
//! applied under the builder's own settings, whatever output was built
//! last, so a plan holds across builds of other outputs.

use crate::compaction::{AppliedCompaction, CompactionOptions, CompactionPlan, CompactionSummary};
use crate::{BuildResult, ContextSession, MemoryState, Result};

use super::{BuildOptions, Output};

/// A [`ContextSession`] with the builder's own options, compiled for the
/// output it built last.
#[derive(Debug)]
pub struct OutputSession {
    session: ContextSession,
    /// The builder's own options.
    own: BuildOptions,
    /// The output whose builder settings the session is compiled with.
    compiled_for: Output,
}

impl OutputSession {
    /// A session over `state` with the builder of `own`.
    ///
    /// # Errors
    ///
    /// Settings the builder refuses; a state the session refuses.
    pub fn new(own: &BuildOptions, state: MemoryState) -> Result<OutputSession> {
        Ok(OutputSession {
            session: ContextSession::new(own.builder()?, state)?,
            own: own.clone(),
            compiled_for: own.output,
        })
    }

    /// The session, to read.
    pub fn session(&self) -> &ContextSession {
        &self.session
    }

    /// The session, to push and extend.
    pub fn session_mut(&mut self) -> &mut ContextSession {
        &mut self.session
    }

    /// This turn's build for `options.output`, the session compiled for it
    /// first if it builds otherwise than the last.
    ///
    /// # Errors
    ///
    /// As [`ContextSession::build`].
    pub fn build(&mut self, options: &BuildOptions) -> Result<BuildResult> {
        self.compile_for(Some(options))?;
        self.session.build()
    }

    /// [`ContextSession::plan_compaction`] under the builder's own settings.
    ///
    /// # Errors
    ///
    /// As [`ContextSession::plan_compaction`].
    pub fn plan_compaction(&mut self, options: &CompactionOptions) -> Result<CompactionPlan> {
        self.compile_for(None)?;
        self.session.plan_compaction(options)
    }

    /// [`ContextSession::apply_compaction`] under the builder's own settings.
    ///
    /// # Errors
    ///
    /// As [`ContextSession::apply_compaction`].
    pub fn apply_compaction(
        &mut self,
        plan: &str,
        summary: CompactionSummary,
    ) -> Result<AppliedCompaction> {
        self.compile_for(None)?;
        self.session.apply_compaction(plan, summary)
    }

    /// Compiles the session for `options` (`None`: the builder's own) if
    /// they build otherwise than the options it is compiled for.
    fn compile_for(&mut self, options: Option<&BuildOptions>) -> Result<()> {
        let options = options.unwrap_or(&self.own);
        if builder_class(options.output) != builder_class(self.compiled_for) {
            self.session.set_builder(&options.builder()?)?;
            self.compiled_for = options.output;
        }
        Ok(())
    }
}

/// What [`BuildOptions::builder`] sets by the output: the history starts
/// with the user, the native protocol, Anthropic's default reserve.
fn builder_class(output: Output) -> (bool, bool, bool) {
    (
        matches!(output, Output::Anthropic | Output::AnthropicNative),
        output.is_native(),
        output == Output::AnthropicNative,
    )
}
