//! [`ContextEngine`]: a durable chat in a [`Store`], built within the budget.
//!
//! The engine loads a branch of a chat into a [`ContextSession`], takes
//! changes (new chunks, the system lane, a replaced assistant message) as
//! pending, and writes all of them in one [`save`](ContextEngine::save).
//! Counts travel with the chunks: the engine stores each chunk's exact
//! counts when it saves it and seeds the session with them when it loads,
//! so a fresh process renders only what its prompt shows and tokenizes
//! nothing it stored.

mod branches;
mod compact;
mod compacted;
mod export;
mod load;
mod newest;
mod record;
mod resume;
mod tally_rules;

use std::sync::Arc;

use crate::budget::{Policy, answered_call, call_id_of, is_compaction};
use crate::error::{ErrorKind, Result};
use crate::fragment::Fragment;
use crate::model::context_management::ContextManagement;
use crate::model::memory::{MemoryChunk, MemoryState};
use crate::model::roles::{ChunkKind, Role};
use crate::output::result::{BuildResult, base_tokens};
use crate::pipeline::kept_alone_tokens;
use crate::session::ContextSession;
use crate::settings::builder::ContextBuilder;
use crate::store::{CountRecord, MAIN_BRANCH, NewChunk, NodeId, Nodes, Save, Store, TOKEN, Usage};
use crate::tokens::known::{self, KnownCounts};
use resume::Start;

/// A durable chat, built turn after turn within the budget.
///
/// ```
/// use std::sync::Arc;
/// use agent_context::store::SqliteStore;
/// use agent_context::{ContextBuilder, ContextEngine, MemoryChunk, Role};
///
/// let store = Arc::new(SqliteStore::in_memory()?);
/// let mut builder = ContextBuilder::new();
/// builder.model("gpt-4o").max_tokens(8_000);
/// let mut engine = ContextEngine::open(store.clone(), "chat-1", builder.clone())?;
/// engine.push(MemoryChunk::agent("u1", Role::User, "Fix the test."))?;
/// engine.save()?;
///
/// // Another process, or after a restart:
/// let mut engine = ContextEngine::open(store, "chat-1", builder)?;
/// let result = engine.build()?;
/// assert_eq!(result.included().collect::<Vec<_>>(), ["u1"]);
/// # Ok::<(), agent_context::Error>(())
/// ```
#[derive(Debug)]
pub struct ContextEngine {
    store: Arc<dyn Store>,
    chat: String,
    branch: String,
    /// The branch's head when loaded or last saved: what a save expects.
    head: Option<NodeId>,
    /// How many chunks the branch holds at `head`.
    stored: usize,
    /// The node of each stored chunk, in session order, once something
    /// needed the stored chunks (a build, the state): the session then
    /// holds them, followed by the pending ones. Before that it holds the
    /// system lane and the pending chunks only, so appending to a long
    /// chat costs what the new chunks cost.
    nodes: Option<Vec<NodeId>>,
    session: ContextSession,
    /// The first stored chunk replaced since the last save: the save
    /// writes the branch again from there.
    replaced_from: Option<usize>,
    system_changed: bool,
    /// The system lane's version when loaded or last saved: what a save
    /// that writes it expects.
    system_version: u64,
    /// Stored chunks loaded without counts under the session's key.
    uncounted: Vec<usize>,
    /// The last build, for [`track_usage`](ContextEngine::track_usage).
    last_build: Option<BuildResult>,
    /// How many chunks a build reads first (see `newest`).
    first_read: usize,
}

impl ContextEngine {
    /// Opens `chat` (created if missing) on its active branch, to build
    /// with `builder`'s settings; usage recorded for the chat calibrates
    /// the builder's estimates. Only where the branch stands is read: its
    /// chunks are read when a build or [`state`](ContextEngine::state)
    /// needs them.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Chat`] if `chat` is empty; [`ErrorKind::Store`] if the
    /// store fails or holds a system lane this version cannot read.
    pub fn open(store: Arc<dyn Store>, chat: &str, builder: ContextBuilder) -> Result<Self> {
        let summary = match store.chat(chat)? {
            Some(summary) => summary,
            None => store.open_chat(chat)?,
        };
        ContextEngine::load_branch(store, chat, &summary.active_branch, builder)
    }

    /// Opens `branch` of `chat` (the chat created if missing), without
    /// making it the active branch.
    ///
    /// # Errors
    ///
    /// As [`open`](ContextEngine::open); [`ErrorKind::Chat`] if there is no
    /// such branch.
    pub fn open_branch(
        store: Arc<dyn Store>,
        chat: &str,
        branch: &str,
        builder: ContextBuilder,
    ) -> Result<Self> {
        if store.chat(chat)?.is_none() {
            if branch != MAIN_BRANCH {
                return Err(ErrorKind::Chat {
                    chat: chat.to_owned(),
                    message: format!(
                        "no branch named {branch:?}: the chat does not exist yet, and a new \
                         chat has only {MAIN_BRANCH:?}"
                    ),
                }
                .into());
            }
            store.open_chat(chat)?;
        }
        ContextEngine::load_branch(store, chat, branch, builder)
    }

    /// Opens `branch` of the existing `chat`, calibrating `builder` with
    /// the chat's recorded usage.
    fn load_branch(
        store: Arc<dyn Store>,
        chat: &str,
        branch: &str,
        builder: ContextBuilder,
    ) -> Result<Self> {
        for usage in store.usage(chat)? {
            if let Some(base) = usage.base_tokens {
                let as_usize = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
                // Recorded only after it calibrated once: it does again.
                let _ = builder.settings.calibration.observe_counts(
                    &usage.model,
                    as_usize(base),
                    as_usize(usage.input_tokens),
                );
            }
        }
        let session = ContextSession::new(builder, MemoryState::new())?;
        let mut engine = ContextEngine {
            store,
            chat: chat.to_owned(),
            branch: branch.to_owned(),
            head: None,
            stored: 0,
            nodes: None,
            session,
            replaced_from: None,
            system_changed: false,
            system_version: 0,
            uncounted: Vec::new(),
            last_build: None,
            first_read: newest::FIRST_READ,
        };
        engine.load()?;
        Ok(engine)
    }

    /// The chat's id.
    pub fn chat(&self) -> &str {
        &self.chat
    }

    /// The branch the engine works on.
    pub fn branch(&self) -> &str {
        &self.branch
    }

    /// The branch's head as the engine last loaded or saved it.
    pub fn head(&self) -> Option<NodeId> {
        self.head
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// Sets how many of the newest chunks a build reads first (512 unless
    /// set; at least 1): a build reads four times as many each time the
    /// budget needs more, and the whole branch at the latest. A chat of
    /// large chunks fills the budget with fewer.
    pub fn set_first_read(&mut self, chunks: usize) {
        self.first_read = chunks.max(1);
    }

    /// How many chunks the branch holds at the engine's head (pending
    /// ones not counted).
    pub fn stored_len(&self) -> usize {
        self.stored
    }

    /// The store's node-level operations.
    pub(super) fn nodes(&self) -> &dyn Nodes {
        self.store.nodes(TOKEN)
    }

    /// The session the engine builds with: the system lane and pending
    /// changes, and the stored chunks once a build or
    /// [`state`](ContextEngine::state) has read them.
    pub fn session(&self) -> &ContextSession {
        &self.session
    }

    /// The memory the engine builds: stored chunks, then pending ones.
    /// Reads the stored chunks first if nothing has yet.
    ///
    /// # Errors
    ///
    /// As [`session`](ContextEngine::session).
    pub fn state(&mut self) -> Result<&MemoryState> {
        self.load_chunks()?;
        Ok(self.session.state())
    }

    /// The system lane and the chunks the session holds: every chunk once
    /// the stored ones are read, else the pending ones.
    pub(super) fn held(&self) -> &MemoryState {
        self.session.state()
    }

    /// How many of the session's chunks are stored ones.
    fn stored_held(&self) -> usize {
        self.nodes.as_ref().map_or(0, Vec::len)
    }

    /// Builds with `builder`'s settings from now on (every chunk is
    /// rendered again).
    ///
    /// # Errors
    ///
    /// As [`ContextBuilder::compile`]; the engine is unchanged.
    pub fn set_builder(&mut self, builder: &ContextBuilder) -> Result<()> {
        self.session.set_builder(builder)
    }

    /// Whether there are changes to save.
    pub fn has_pending(&self) -> bool {
        self.held().chunks.len() > self.stored_held()
            || self.replaced_from.is_some()
            || self.system_changed
    }

    /// Appends a chunk, pending until [`save`](ContextEngine::save).
    ///
    /// # Errors
    ///
    /// As [`ContextSession::push`]: an invalid chunk or an id already on
    /// the branch; nothing changes.
    pub fn push(&mut self, chunk: MemoryChunk) -> Result<()> {
        self.extend(std::iter::once(chunk))
    }

    /// Appends chunks, all or none, pending until [`save`](ContextEngine::save).
    /// Before the stored chunks are read, each new id is looked up in the
    /// store's index, so the cost does not grow with the chat.
    ///
    /// # Errors
    ///
    /// As [`ContextSession::extend`]; nothing changes.
    pub fn extend(&mut self, chunks: impl IntoIterator<Item = MemoryChunk>) -> Result<()> {
        let chunks: Vec<MemoryChunk> = chunks.into_iter().collect();
        if self.nodes.is_none() && chunks.iter().any(is_compaction) {
            // What a compaction covers is checked against the branch.
            self.load_chunks()?;
        }
        if self.nodes.is_none() {
            self.refuse_stored_ids(&chunks)?;
        }
        self.session.extend(chunks)
    }

    /// Refuses a chunk whose id a stored chunk of the branch has.
    pub(super) fn refuse_stored_ids(&self, chunks: &[MemoryChunk]) -> Result<()> {
        let Some(head) = self.head else {
            return Ok(());
        };
        for (offset, chunk) in chunks.iter().enumerate() {
            if let Some(stored) = self.nodes().find_chunk(&self.chat, head, &chunk.id)? {
                return Err(ErrorKind::Chunk {
                    location: crate::error::ChunkLocation {
                        index: self.held().chunks.len() + offset,
                        id: Some(chunk.id.clone()),
                    },
                    field: "id".into(),
                    message: format!(
                        "duplicate id: a chunk with this id is already on branch {:?} (stored \
                         chunk {}); give the new chunk another id",
                        self.branch, stored.position
                    ),
                }
                .into());
            }
        }
        Ok(())
    }

    /// Sets the chat's system prompt, pending until saved. Setting the
    /// prompt it has changes nothing, so it cannot conflict with another
    /// writer's.
    pub fn set_system_prompt(&mut self, prompt: Option<String>) {
        if self.held().system_prompt != prompt {
            self.session.set_system_prompt(prompt);
            self.system_changed = true;
        }
    }

    /// Sets the chat's fragments (the system lane), pending until saved.
    /// Setting the fragments it has changes nothing.
    pub fn set_fragments(&mut self, fragments: Vec<Fragment>) {
        if self.held().fragments != fragments {
            self.session.set_fragments(fragments);
            self.system_changed = true;
        }
    }

    /// Sets the chat's `context_management` (kept in the system lane
    /// beside the prompt and fragments), pending until saved; builds apply
    /// it unless the builder's policy sets its own. Setting the one it has
    /// changes nothing.
    pub fn set_context_management(&mut self, management: Option<ContextManagement>) {
        if self.held().context_management != management {
            self.session.set_context_management(management);
            self.system_changed = true;
        }
    }

    /// Replaces the branch's latest assistant message (an `agent` chunk
    /// with role `assistant`; a pending one first, then a stored one) by
    /// `chunk`, in place, or appends `chunk` if there is none. Builds see
    /// the change at once; the store at [`save`](ContextEngine::save), which
    /// writes the branch again from the replaced chunk (other branches and
    /// checkpoints that reach the old one keep it). Returns whether it
    /// replaced one.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Chunk`] if `chunk` is not an assistant message, is
    /// invalid, or takes an id another chunk has; nothing changes.
    pub fn replace_last_assistant(&mut self, chunk: MemoryChunk) -> Result<bool> {
        if chunk.kind != ChunkKind::Agent || chunk.role != Some(Role::Assistant) {
            return Err(ErrorKind::Chunk {
                location: crate::error::ChunkLocation {
                    index: self.held().chunks.len(),
                    id: Some(chunk.id.clone()),
                },
                field: "kind".into(),
                message: "the replacement of the last assistant message must be an `agent` \
                          chunk with role `assistant`"
                    .into(),
            }
            .into());
        }
        self.load_chunks()?;
        let chunks = &self.session.state().chunks;
        let last = chunks
            .iter()
            .rposition(|c| c.kind == ChunkKind::Agent && c.role == Some(Role::Assistant));
        let Some(index) = last else {
            self.session.push(chunk)?;
            return Ok(false);
        };
        let id = chunks[index].id.clone();
        self.session.replace(&id, chunk)?;
        if index < self.stored_held() {
            self.replaced_from = Some(self.replaced_from.map_or(index, |i| i.min(index)));
        }
        Ok(true)
    }

    /// Writes every pending change in one transaction: on success they
    /// are stored; on error nothing is.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Conflict`] if another writer moved the branch's head
    /// since this engine loaded or saved it, [`ErrorKind::SystemConflict`]
    /// if this save sets the system lane (prompt, fragments or
    /// `context_management`) and another writer set it since (either way,
    /// [`reload`](ContextEngine::reload) and apply the change again);
    /// [`ErrorKind::Store`] if the store fails.
    /// The engine keeps its pending changes.
    pub fn save(&mut self) -> Result<()> {
        if !self.has_pending() {
            return Ok(());
        }
        let from = self.replaced_from.unwrap_or(self.stored_held());
        let chunks = self.chunks_to_store(from)?;
        let mut save = Save::append(&self.branch, self.head, chunks);
        if let (Some(_), Some(nodes)) = (self.replaced_from, &self.nodes) {
            let parent = from.checked_sub(1).map(|i| nodes[i]);
            save = save.replacing(nodes[from], parent);
        }
        if self.system_changed {
            save = save.with_system(load::system_lane_json(self.held()), self.system_version);
        }
        let saved = self.nodes().save(&self.chat, &save)?;
        match &mut self.nodes {
            Some(nodes) => {
                nodes.truncate(from);
                nodes.extend(saved.nodes);
                self.stored = nodes.len();
            }
            None => {
                // The saved chunks are stored ones now, read again when needed.
                self.stored += saved.nodes.len();
                self.session = self.lane_session()?;
            }
        }
        self.head = saved.head;
        if self.system_changed {
            // Only a save that wrote the lane may take its version: another
            // writer's lane, unseen here, must still conflict.
            self.system_version = saved.system_version;
        }
        self.replaced_from = None;
        self.system_changed = false;
        Ok(())
    }

    /// The chunks from `from` on, with their counts when they can be kept.
    fn chunks_to_store(&mut self, from: usize) -> Result<Vec<NewChunk>> {
        let end = self.held().chunks.len();
        let key = self.session.count_key();
        let counts = match &key {
            Some(_) => self.session.counts_to_keep(from..end)?,
            None => vec![None; end - from],
        };
        let orphans = self.orphans(from)?;
        let chunks = &self.session.state().chunks[from..];
        chunks
            .iter()
            .zip(counts)
            .zip(orphans)
            .enumerate()
            .map(|(offset, ((chunk, value), orphan))| {
                let json = load::stored_json(chunk, from + offset)?;
                let counts = key.clone().zip(value).and_then(|(key, value)| {
                    // An orphan result is in no prompt: it adds no tokens.
                    let tokens = if orphan {
                        0
                    } else {
                        kept_alone_tokens(&value)?
                    };
                    Some(CountRecord { key, value, tokens })
                });
                let mut meta = tally_rules::meta_of(chunk);
                meta.orphan = orphan;
                Ok(NewChunk::new(chunk.id.clone(), json, counts).with_meta(meta))
            })
            .collect()
    }

    /// Per session chunk from `from` on, whether it is a tool result whose
    /// call is neither among the chunks from `from` on nor on the branch at
    /// the engine's head: an orphan, left out of every prompt.
    fn orphans(&self, from: usize) -> Result<Vec<bool>> {
        let chunks = &self.held().chunks[from..];
        // The calls before `from` are on the path to the head: the store's
        // index finds them, so a save need not go over the chunks it keeps.
        let calls: rustc_hash::FxHashSet<&str> = chunks.iter().filter_map(call_id_of).collect();
        let mut orphans = Vec::with_capacity(chunks.len());
        for chunk in chunks {
            let orphan = match (answered_call(chunk), self.head) {
                (Some(call), head) if !calls.contains(call) => match head {
                    Some(head) => self
                        .nodes()
                        .find_call(&self.chat, head, call, usize::MAX >> 1)?
                        .is_none(),
                    None => true,
                },
                _ => false,
            };
            orphans.push(orphan);
        }
        Ok(orphans)
    }

    /// Builds this turn's prompt with the builder's policy. It extends the
    /// branch's last build, as a [`ContextSession`] extends its own: the
    /// engine's, or the one the store keeps from a build in any process,
    /// when it was made under the same settings at a head this one
    /// descends from (see [`BuildResult::previous_build`]); it keeps this
    /// one for the next build. Before the stored chunks are read, it reads
    /// only the window and what came after it (and the protected chunks)
    /// when that makes the prompt a build of the whole branch makes, and
    /// says in [`BuildResult::unread_chunks`] how many it left; otherwise
    /// it reads them all and builds as the session does, incrementally
    /// from then on.
    ///
    /// # Errors
    ///
    /// As [`ContextSession::build`].
    pub fn build(&mut self) -> Result<BuildResult> {
        let policy = self.session.config().build_settings().policy.clone();
        self.build_with(&policy)
    }

    /// Builds this turn's prompt with `policy` instead of the builder's
    /// (for this turn only), as [`build`](ContextEngine::build) does.
    ///
    /// # Errors
    ///
    /// As [`ContextSession::build_with`].
    pub fn build_with(&mut self, policy: &Policy) -> Result<BuildResult> {
        let key = self.session.config().build_settings().plan_key(policy);
        let mut warnings = Vec::new();
        let start = self.start(key.as_deref(), &mut warnings)?;
        self.ready_counts(start.record());
        let capture = known::Capture::start();
        let (mut result, record) = match self.build_from_newest(policy, start.record())? {
            Some(built) => {
                let record = key.and_then(|key| self.record_of_newest(key, start.record(), &built));
                (built.result, record)
            }
            None => {
                self.load_chunks()?;
                if let Start::Kept(record) = &start {
                    self.session.resume(record.resumed());
                }
                let result = self.session.build_with(policy)?;
                let record = key.and_then(|key| self.record_of_session(key, &result));
                (result, record)
            }
        };
        let noted = capture.finish();
        result.previous_build = Some(start.outcome());
        // What this engine sent last is what a prompt cache holds for it.
        result.cache = (self.last_build.as_ref()).map(|last| result.cache_since(last));
        result.warnings.append(&mut warnings);
        if let Some(mut record) = record {
            record.counts = KnownCounts::of(noted);
            self.keep_record(&record, &mut result.warnings);
        }
        self.last_build = Some(result.clone());
        Ok(result)
    }

    /// Stores the counts of stored chunks that were loaded without them
    /// (stored by other settings, or before counts were kept), as the
    /// session has them now, so the next process need not count them.
    /// Returns how many it stored.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Store`] if the store fails.
    pub fn keep_counts(&mut self) -> Result<usize> {
        let Some(key) = self.session.count_key() else {
            return Ok(0);
        };
        // A chunk replaced since the load is no longer its node's chunk.
        let replaced = self.replaced_from.unwrap_or(usize::MAX);
        self.uncounted.retain(|&index| index < replaced);
        let uncounted = std::mem::take(&mut self.uncounted);
        let counts = self.session.counts_to_keep(uncounted.iter().copied())?;
        let orphans = self.orphans(0)?;
        let nodes = self.nodes.as_deref().unwrap_or_default();
        let kept: Vec<(NodeId, String, u64)> = uncounted
            .iter()
            .zip(counts)
            .filter_map(|(&index, value)| {
                let value = value?;
                let orphan = orphans.get(index).copied().unwrap_or(false);
                let tokens = if orphan {
                    0
                } else {
                    kept_alone_tokens(&value)?
                };
                Some((*nodes.get(index)?, value, tokens))
            })
            .collect();
        self.nodes().put_counts(&self.chat, &key, &kept)?;
        Ok(kept.len())
    }

    /// Records what the provider billed for the last built prompt. For a
    /// model counted by estimate, the billed input calibrates the builder's
    /// estimates (see [`Calibration`](crate::tokens::Calibration)), now and
    /// whenever the chat is opened again.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Option`] if the input figure cannot be for the last
    /// prompt (nothing is recorded); [`ErrorKind::Store`] if the store fails.
    pub fn track_usage(&mut self, input_tokens: u64, output_tokens: u64) -> Result<()> {
        let model = self.session.config().build_settings().model.clone();
        let mut base = None;
        if let Some(result) = self.last_build.as_ref().filter(|r| !r.token_count_exact) {
            let tokens = base_tokens(result)?;
            let billed = usize::try_from(input_tokens).unwrap_or(usize::MAX);
            self.session
                .config()
                .build_settings()
                .calibration
                .observe_counts(&result.model, tokens, billed)?;
            base = Some(tokens as u64);
        }
        let usage = Usage {
            model,
            input_tokens,
            output_tokens,
            base_tokens: base,
        };
        self.store.record_usage(&self.chat, &usage)
    }

    /// Drops the pending changes and loads the branch again as stored.
    ///
    /// # Errors
    ///
    /// As [`open`](ContextEngine::open).
    pub fn reload(&mut self) -> Result<()> {
        self.load()
    }
}
