//! [`ContextSession`]: a long-running agent's memory, rebuilt every turn at
//! the cost of what is new.
//!
//! The session keeps each chunk's exact counts, and the rendered text of
//! those its prompt shows, so a turn tokenizes only the chunks added or
//! changed since the last build (and, rarely, renders again a chunk whose
//! text it let go and that comes back). It also keeps its last build: the
//! cut made to fit the budget stays put between trims (the elision frontier
//! only moves forward), `stable_prefix_tokens` is reported every turn, and
//! a turn that only appended chunks extends that build, or plans again
//! over its prompt when the cut must move, at a cost that does not grow
//! with the session (see `pipeline::extend`); other turns run the
//! full pipeline, linear in the number of chunks. A build is
//! byte-identical to a cold [`ContextBuilder::build`] of the same state
//! given the same previous build.

pub(crate) mod config;

use std::collections::HashSet;

use rustc_hash::FxHashMap;

use crate::budget::{Policy, Summarizer};
use crate::compaction::{
    self, AppliedCompaction, CompactionOptions, CompactionPlan, CompactionSummary,
};
use crate::error::{ChunkLocation, ErrorKind, Result};
use crate::fragment::Fragment;
use crate::model::chunk_id::fingerprint;
use crate::model::compaction::check_covers;
use crate::model::context_management::ContextManagement;
use crate::model::memory::{DUPLICATE_ID, MemoryChunk, MemoryState, chunk_error};
use crate::model::roles::ChunkKind;
use crate::output::last_build::LastBuild;
use crate::output::result::BuildResult;
use crate::output::stats::BuildStats;
use crate::pipeline::{BuildCache, Outside, Pass, count_key, seed_counts};
use crate::session::config::ContextConfig;
use crate::settings::builder::ContextBuilder;
use crate::tokens::TokenCounter;

/// A session that is built turn after turn.
///
/// ```
/// use agent_context::{ContextBuilder, ContextSession, MemoryChunk, MemoryState, Role};
///
/// let mut builder = ContextBuilder::new();
/// builder.model("gpt-4o").max_tokens(8_000);
/// let mut session = ContextSession::new(builder, MemoryState::new())?;
/// session.push(MemoryChunk::agent("u1", Role::User, "Fix the test."))?;
/// let first = session.build()?;
/// session.push(MemoryChunk::agent("a1", Role::Assistant, "On it."))?;
/// let second = session.build()?;
/// assert_eq!(session.stats().chunks_rendered, 1, "only the new chunk was rendered");
/// assert_eq!(second.stable_prefix_tokens, Some(first.messages[0].tokens));
/// # Ok::<(), agent_context::Error>(())
/// ```
///
/// A clone is a fork: the two sessions share their rendered chunks (each
/// held once, behind a reference count) and go on apart.
#[derive(Debug, Clone)]
pub struct ContextSession {
    config: ContextConfig,
    state: MemoryState,
    cache: BuildCache,
    /// The last build: its cut is repeated while it fits, and a turn that
    /// only appends chunks extends it.
    last: Option<LastBuild>,
    /// The ids in `state`, to check new chunks in constant time.
    ids: IdSet,
}

impl ContextSession {
    /// A session over `state`, built with `builder`'s settings, its policy
    /// included (a turn may pass its own with
    /// [`build_with`](ContextSession::build_with)). The builder's previous
    /// build is replaced by the session's own last build.
    ///
    /// # Errors
    ///
    /// As [`MemoryState::validate`], then as [`ContextBuilder::compile`].
    pub fn new(builder: ContextBuilder, state: MemoryState) -> Result<Self> {
        state.validate()?;
        Ok(ContextSession::over(builder.compile()?, state))
    }

    /// A session over `state` built with settings compiled before (several
    /// sessions can share them).
    ///
    /// # Errors
    ///
    /// As [`MemoryState::validate`].
    pub fn with_config(config: ContextConfig, state: MemoryState) -> Result<Self> {
        state.validate()?;
        Ok(ContextSession::over(config, state))
    }

    /// A session over a validated `state`.
    fn over(config: ContextConfig, state: MemoryState) -> Self {
        let mut ids = IdSet::default();
        state.chunks.iter().for_each(|c| ids.insert(&c.id));
        ContextSession {
            config,
            state,
            cache: BuildCache::default(),
            last: None,
            ids,
        }
    }

    /// The session's memory.
    pub fn state(&self) -> &MemoryState {
        &self.state
    }

    /// Builds with `builder`'s settings from now on. They can change every
    /// chunk's rendering (model, escaping, renderers…), so the cache is
    /// cleared; the last build is kept, for a stable cut.
    ///
    /// # Errors
    ///
    /// As [`ContextBuilder::compile`]; the session is unchanged.
    pub fn set_builder(&mut self, builder: &ContextBuilder) -> Result<()> {
        self.config = builder.compile()?;
        self.cache.clear();
        self.stop_extending();
        Ok(())
    }

    /// Appends a chunk.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Chunk`] if the chunk is invalid or its id is taken; the
    /// session is unchanged.
    pub fn push(&mut self, chunk: MemoryChunk) -> Result<()> {
        self.check_new(&chunk, self.state.chunks.len())?;
        self.check_compaction(&chunk, &[])?;
        self.append_checked(chunk);
        Ok(())
    }

    /// Appends a compaction chunk that [`compaction::apply`] made and
    /// checked against the history (which a stored chat may hold only in
    /// part here).
    pub(crate) fn push_applied(&mut self, chunk: MemoryChunk) -> Result<()> {
        self.check_new(&chunk, self.state.chunks.len())?;
        self.append_checked(chunk);
        Ok(())
    }

    /// Appends `chunk`, checked already.
    fn append_checked(&mut self, chunk: MemoryChunk) {
        self.ids.insert(&chunk.id);
        self.make_room(1);
        self.state.chunks.push(chunk);
    }

    /// Appends chunks, all or none.
    ///
    /// # Errors
    ///
    /// As [`push`](ContextSession::push), for the first bad chunk; the
    /// session is unchanged.
    pub fn extend(&mut self, chunks: impl IntoIterator<Item = MemoryChunk>) -> Result<()> {
        let chunks: Vec<MemoryChunk> = chunks.into_iter().collect();
        let mut ids: HashSet<&str> = HashSet::with_capacity(chunks.len());
        for (offset, chunk) in chunks.iter().enumerate() {
            let index = self.state.chunks.len() + offset;
            self.check_new(chunk, index)?;
            self.check_compaction(chunk, &chunks[..offset])?;
            if !ids.insert(&chunk.id) {
                return Err(chunk_error(index, chunk, "id", DUPLICATE_ID.into()));
            }
        }
        chunks.iter().for_each(|c| self.ids.insert(&c.id));
        self.make_room(chunks.len());
        self.state.chunks.extend(chunks);
        Ok(())
    }

    /// Makes room for at least `additional` more chunks, so pushing them
    /// moves none of the others. A session grows its room by a quarter when
    /// full; a fork ([`Clone`]) has none spare, and its first push would
    /// otherwise copy every chunk's record.
    pub fn reserve(&mut self, additional: usize) {
        self.make_room(additional);
        self.cache.reserve(self.state.chunks.capacity());
    }

    /// Replaces the chunk with the same id, in place.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Chunk`] if no chunk has that id or the new chunk is invalid.
    pub fn update(&mut self, chunk: MemoryChunk) -> Result<()> {
        let index = self.index_of(&chunk.id)?;
        chunk.validate_at(index)?;
        self.cache.forget(index);
        self.stop_extending();
        self.state.chunks[index] = chunk;
        Ok(())
    }

    /// Replaces the chunk with `id` by `chunk`, in place, and returns it;
    /// `chunk` may have another id (one no other chunk has).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Chunk`] if no chunk has `id`, or `chunk` is invalid or
    /// its id is taken; the session is unchanged.
    pub fn replace(&mut self, id: &str, chunk: MemoryChunk) -> Result<MemoryChunk> {
        let index = self.index_of(id)?;
        if chunk.id != id {
            self.check_new(&chunk, index)?;
        }
        chunk.validate_at(index)?;
        self.cache.forget(index);
        self.stop_extending();
        if let Some(last) = self.last.as_mut() {
            last.cut.replace(index, id, &chunk.id);
        }
        self.ids.remove(id);
        self.ids.insert(&chunk.id);
        Ok(std::mem::replace(&mut self.state.chunks[index], chunk))
    }

    /// Sets the system prompt.
    pub fn set_system_prompt(&mut self, prompt: Option<String>) {
        self.stop_extending();
        self.state.system_prompt = prompt;
    }

    /// Sets the fragments of structured system context.
    pub fn set_fragments(&mut self, fragments: Vec<Fragment>) {
        self.stop_extending();
        self.state.fragments = fragments;
    }

    /// Sets the session's `context_management`, which builds apply unless
    /// their policy sets its own.
    pub fn set_context_management(&mut self, management: Option<ContextManagement>) {
        self.stop_extending();
        self.state.context_management = management;
    }

    /// The settings the session builds with.
    pub fn builder(&self) -> &ContextBuilder {
        self.config.settings()
    }

    /// The settings the session builds with, compiled.
    pub fn config(&self) -> &ContextConfig {
        &self.config
    }

    /// The key a store keeps this session's counts under, if they can be
    /// kept (see `pipeline::stored`).
    pub(crate) fn count_key(&self) -> Option<String> {
        count_key(self.config.build_settings())
    }

    /// The counts a store keeps of the chunks at `indices`, rendering and
    /// counting those the session has not.
    pub(crate) fn counts_to_keep(
        &mut self,
        indices: impl ExactSizeIterator<Item = usize>,
    ) -> Result<Vec<Option<String>>> {
        (self.config).counts_to_keep(&self.state, indices, &mut self.cache)
    }

    /// Takes in counts a store kept, `(chunk index, counts)`, for chunks
    /// not rendered yet.
    pub(crate) fn seed_counts<'a>(&mut self, kept: impl IntoIterator<Item = (usize, &'a str)>) {
        seed_counts(self.config.build_settings(), kept, &mut self.cache);
    }

    /// Removes the chunk with `id` and returns it.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Chunk`] if no chunk has that id.
    pub fn remove(&mut self, id: &str) -> Result<MemoryChunk> {
        let index = self.index_of(id)?;
        self.cache.remove(index);
        self.stop_extending();
        if let Some(last) = self.last.as_mut() {
            last.cut.remove(index, id);
        }
        self.ids.remove(id);
        Ok(self.state.chunks.remove(index))
    }

    /// The policy the session builds with, the builder's: changing it
    /// keeps the rendered chunks (a chunk whose cap changes is rendered again).
    pub fn policy_mut(&mut self) -> &mut Policy {
        self.config.policy_mut()
    }

    /// Builds this turn's prompt with the builder's policy, rendering only
    /// chunks that are new or changed (or whose cap changed, or that come
    /// back after the session let their text go:
    /// [`BuildStats::chunks_restored`]). The result is the one
    /// [`ContextBuilder::build`] gives for the same state and previous build.
    ///
    /// # Errors
    ///
    /// As [`ContextBuilder::build`]; the session keeps its previous build.
    pub fn build(&mut self) -> Result<BuildResult> {
        // A handle on the settings (an `Arc`), so the policy can be lent
        // while the session changes.
        let config = self.config.clone();
        self.run(&config.build_settings().policy)
    }

    /// Builds this turn's prompt with `policy` instead of the builder's
    /// (for this turn only), as [`build`](ContextSession::build) does.
    ///
    /// # Errors
    ///
    /// As [`ContextBuilder::build`]; the session keeps its previous build.
    pub fn build_with(&mut self, policy: &Policy) -> Result<BuildResult> {
        self.run(policy)
    }

    /// Builds with `policy`: by extending the last build when the turn
    /// only appended chunks and its cut still fits, else by the full
    /// pipeline.
    fn run(&mut self, policy: &Policy) -> Result<BuildResult> {
        self.cache.start_build(self.state.chunks.capacity());
        let settings = self.config.build_settings();
        (self.cache).forget_unstable(&settings.renderers, &self.state);
        if let Some(last) = self.last.as_mut().filter(|last| last.extendable) {
            let pass = Pass {
                policy,
                previous: None,
                cache: &mut self.cache,
                outside: Outside::default(),
            };
            if let Some(result) = self.config.extend(&self.state, pass, last)? {
                return Ok(result);
            }
        }
        // New chunks a turn rendered before handing over to the full
        // pipeline are rendered once: the pipeline finds them cached.
        let rendered_before = self.cache.stats.chunks_rendered;
        let pass = Pass {
            policy,
            previous: self.last.as_ref(),
            cache: &mut self.cache,
            outside: Outside::default(),
        };
        let result = self.config.build_with(&self.state, pass)?;
        let cached = &mut self.cache.stats.chunks_cached;
        *cached = cached.saturating_sub(rendered_before);
        let mut last = LastBuild::of_session(result.clone(), &self.state, policy, settings);
        last.tally = self.cache.tally.take();
        self.last = Some(last);
        Ok(result)
    }

    /// Keeps the last build's cut but no longer extends it: the chunks or
    /// settings it was built from changed.
    fn stop_extending(&mut self) {
        if let Some(last) = self.last.as_mut() {
            last.extendable = false;
        }
    }

    /// Plans a compaction of this session's history (see
    /// [`crate::compaction`]): the span to fold and the request that
    /// summarizes it, or why there is nothing to fold. The session is
    /// unchanged; hand the plan and the summary to
    /// [`apply_compaction`](ContextSession::apply_compaction).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Option`] for options that contradict each other or the
    /// budget; [`ErrorKind::Tokenizer`] if a tokenizer fails.
    pub fn plan_compaction(&mut self, options: &CompactionOptions) -> Result<CompactionPlan> {
        self.plan_compaction_in(options, &session_scope(&|index| index as u64))
    }

    /// [`plan_compaction`](ContextSession::plan_compaction) for `scope`.
    pub(crate) fn plan_compaction_in(
        &mut self,
        options: &CompactionOptions,
        scope: &compaction::Scope<'_>,
    ) -> Result<CompactionPlan> {
        let config = self.config.clone();
        let counter = config.counter()?;
        let chat = chat_of(&config, counter.as_ref());
        compaction::plan(&chat, (&self.state, &mut self.cache), options, scope)
    }

    /// Appends the compaction `plan` describes, with `summary`: a
    /// `compaction` chunk whose summary takes the place of the span in
    /// every later build. Chunks pushed after the plan stay after the span.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Compaction`] for a plan that no longer holds or a
    /// summary that is empty or no smaller than what it folds (the session
    /// is unchanged); [`ErrorKind::Tokenizer`] if a tokenizer fails.
    pub fn apply_compaction(
        &mut self,
        plan: &str,
        summary: impl Into<CompactionSummary>,
    ) -> Result<AppliedCompaction> {
        let scope = session_scope(&|index| index as u64);
        let made = self.compaction_of(plan, summary.into(), &scope)?;
        let applied = made.applied();
        self.push(made.chunk)?;
        Ok(applied)
    }

    /// Plans a compaction, asks `summarizer` for the summary of the chunks
    /// it folds (oldest first, in at most the plan's `summary_tokens`), and
    /// applies it: [`plan_compaction`](ContextSession::plan_compaction) and
    /// [`apply_compaction`](ContextSession::apply_compaction) in one call,
    /// for a runtime whose model answers synchronously. `None` when there
    /// is nothing to fold or the summarizer declines.
    ///
    /// # Errors
    ///
    /// As `plan_compaction` and `apply_compaction` (a summary no smaller
    /// than what it folds is refused; the session is unchanged).
    pub fn compact_with(
        &mut self,
        summarizer: &dyn Summarizer,
        options: &CompactionOptions,
    ) -> Result<Option<AppliedCompaction>> {
        let scope = session_scope(&|index| index as u64);
        match self.summarized(summarizer, options, &scope)? {
            Some((plan, summary)) => self.apply_compaction(&plan, summary).map(Some),
            None => Ok(None),
        }
    }

    /// A plan in `scope` and `summarizer`'s summary of the chunks it folds
    /// (oldest first, in at most the plan's `summary_tokens`); `None` when
    /// there is nothing to fold or the summarizer declines.
    pub(crate) fn summarized(
        &mut self,
        summarizer: &dyn Summarizer,
        options: &CompactionOptions,
        scope: &compaction::Scope<'_>,
    ) -> Result<Option<(String, String)>> {
        let CompactionPlan::Ready(plan) = self.plan_compaction_in(options, scope)? else {
            return Ok(None);
        };
        let folded = compaction::folded_by(&self.state, &plan.covers);
        let summary = summarizer.summarize(&folded, plan.summary_tokens);
        Ok(summary.map(|summary| (plan.plan, summary)))
    }

    /// The compaction chunk that applies `plan` with `summary` to this
    /// session in `scope`, not appended yet.
    pub(crate) fn compaction_of(
        &mut self,
        plan: &str,
        summary: CompactionSummary,
        scope: &compaction::Scope<'_>,
    ) -> Result<compaction::Compaction> {
        let config = self.config.clone();
        let counter = config.counter()?;
        let chat = chat_of(&config, counter.as_ref());
        compaction::apply(
            &chat,
            (&self.state, &mut self.cache),
            (plan, summary),
            scope,
        )
    }

    /// What the last build had to render and count.
    pub fn stats(&self) -> BuildStats {
        self.cache.stats
    }

    /// Forgets every rendered chunk (the next build renders all of them) but
    /// keeps the previous build.
    pub fn clear_cache(&mut self) {
        self.cache.clear();
        self.stop_extending();
    }

    /// The last build, if the session has made one.
    pub(crate) fn last_build(&self) -> Option<&LastBuild> {
        self.last.as_ref()
    }

    /// Takes `last` as the last build, when the session has made none: the
    /// next build repeats its cut, as a builder given a previous build does.
    pub(crate) fn resume(&mut self, last: LastBuild) {
        if self.last.is_none() {
            self.last = Some(last);
        }
    }

    /// Forgets the previous build: the next build plans from scratch.
    pub fn forget_previous(&mut self) {
        self.last = None;
    }

    /// Grows the chunks by a quarter when full, not by the doubling `Vec`
    /// would do: still amortized constant time per chunk, and a long
    /// session carries at most a quarter of spare room (the cache's slots
    /// grow with it).
    fn make_room(&mut self, additional: usize) {
        let chunks = &mut self.state.chunks;
        if chunks.len() + additional > chunks.capacity() {
            chunks.reserve_exact(additional.max(chunks.len() / 4));
        }
    }

    fn check_new(&self, chunk: &MemoryChunk, index: usize) -> Result<()> {
        chunk.validate_at(index)?;
        if self.ids.may_contain(&chunk.id) && self.state.chunks.iter().any(|c| c.id == chunk.id) {
            return Err(chunk_error(index, chunk, "id", DUPLICATE_ID.into()));
        }
        Ok(())
    }

    /// Checks a compaction appended after the session's chunks and
    /// `batch` (those appended with it, before it) against them: see
    /// [`check_covers`]. Any other chunk passes.
    fn check_compaction(&self, chunk: &MemoryChunk, batch: &[MemoryChunk]) -> Result<()> {
        let Some(covers) = chunk.covers() else {
            return Ok(());
        };
        let before: Vec<&MemoryChunk> = self.state.chunks.iter().chain(batch).collect();
        let find = |id: &str| before.iter().rposition(|c| c.id == id);
        let covered = find(covers).map(|i| (i, before[i]));
        let previous = before
            .iter()
            .rev()
            .find(|c| c.kind == ChunkKind::Compaction)
            .and_then(|c| Some((*c, find(c.covers()?)?)));
        check_covers(covers, covered, previous)
            .map(|_| ())
            .map_err(|message| chunk_error(before.len(), chunk, "covers", message))
    }

    fn index_of(&self, id: &str) -> Result<usize> {
        self.state
            .chunks
            .iter()
            .position(|c| c.id == id)
            .ok_or_else(|| {
                ErrorKind::Chunk {
                    location: ChunkLocation {
                        index: self.state.chunks.len(),
                        id: Some(id.to_owned()),
                    },
                    field: "id".into(),
                    message: "no chunk in the session has this id".into(),
                }
                .into()
            })
    }
}

/// What compaction reads of `config`, counting with `counter`.
fn chat_of<'a>(config: &'a ContextConfig, counter: &'a dyn TokenCounter) -> compaction::Chat<'a> {
    compaction::Chat {
        settings: config.build_settings(),
        counter,
        budget: config.budget(),
        max_tokens: config.max_tokens(),
    }
}

/// The scope of a session's plans, whose chunks are told apart by
/// `place` (their index).
fn session_scope(place: &dyn Fn(usize) -> u64) -> compaction::Scope<'_> {
    compaction::Scope {
        name: "session".into(),
        place,
    }
}

/// The ids of a session's chunks, kept as 64-bit hashes (with a count, for
/// the rare ids that share one) rather than copies: a hit is confirmed
/// against the chunks themselves.
#[derive(Debug, Clone, Default)]
struct IdSet(FxHashMap<u64, u32>);

impl IdSet {
    fn insert(&mut self, id: &str) {
        *self.0.entry(fingerprint(id)).or_default() += 1;
    }

    fn remove(&mut self, id: &str) {
        let key = fingerprint(id);
        if let Some(count) = self.0.get_mut(&key) {
            *count -= 1;
            if *count == 0 {
                self.0.remove(&key);
            }
        }
    }

    fn may_contain(&self, id: &str) -> bool {
        self.0.contains_key(&fingerprint(id))
    }
}
