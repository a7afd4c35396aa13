//! [`BuildCache`]: the chunks a build rendered and counted, kept for the
//! next build of the same chunks.

use std::sync::Arc;

use super::ready::PreparedChunk;
use super::trim_window::KeptWindow;
use crate::budget::{Decision, MIN_CAP, Tally};
use crate::error::Result;
use crate::model::chunk_id::ChunkId;
use crate::model::memory::MemoryState;
use crate::model::roles::Role;
use crate::output::stats::BuildStats;
use crate::render::RendererRegistry;
use crate::tokens::parts::CountedText;

/// Rendered chunks, one slot per chunk in the same order, each with the
/// cap it was rendered under and its stub once asked for: the scratch
/// space builds work in, owned by their caller, as a compiled regex's
/// users own its cache. A [`ContextConfig`](crate::ContextConfig) is
/// immutable and may be shared by many sessions; each session keeps a
/// cache aligned with its chunks (a new chunk gets an empty slot, an
/// edited one is emptied, a removed one removed) and clears it when a
/// setting that shapes rendering changes. Slots by position spare every
/// build a hash lookup per chunk.
///
/// A caller that keeps one itself, for
/// [`ContextConfig::build_in`](crate::ContextConfig::build_in), keeps the
/// same contract: a chunk is known by its position and id. A slot whose
/// chunk's id changed is emptied, and a cache filled under other settings
/// is cleared, but a chunk edited in place under the same id must be
/// [forgotten](BuildCache::forget_chunk) (or the cache
/// [cleared](BuildCache::clear)), or its old rendering is used.
///
/// A build gets shared handles to what it asks for, and hands back those
/// whose text its prompt will not show: their counts stay, their text
/// goes. A clone shares the renderings (each held once, behind a
/// reference count).
#[derive(Debug, Clone, Default)]
pub struct BuildCache {
    slots: Vec<Option<Entry>>,
    /// Each chunk's id, shared by every report (aligned like `slots`).
    ids: Vec<Option<ChunkId>>,
    pub(crate) stats: BuildStats,
    /// The encoding name of the counter the slots were counted with.
    counted_with: String,
    /// The compiled settings the slots were rendered under (see
    /// [`follow`](BuildCache::follow)).
    rendered_under: Option<u64>,
    /// What the last build's `clear_tool_uses` edit measured and cleared,
    /// for a session to carry on (see `pipeline::clear`).
    pub(crate) tally: Option<Tally>,
    /// The window the last trim left (see `pipeline::trim_window`).
    window: Option<KeptWindow>,
}

/// Laid out small: a session holds one per chunk.
#[derive(Debug, Clone)]
struct Entry {
    part: Arc<CountedText>,
    /// The stub, if the chunk has one, once `stub_known`.
    stub: Option<Arc<CountedText>>,
    cap: Option<usize>,
    /// The decision when the cap cut the body (else it was kept whole).
    truncated: Option<Box<Decision>>,
    role: Role,
    stub_known: bool,
}

impl Entry {
    /// Whether this rendering is the one `cap` gives: the same cap, or a
    /// chunk rendered whole that `cap` would not cut either.
    fn serves(&self, cap: Option<usize>) -> bool {
        let fits = |cap: usize| self.part.alone() <= cap.max(MIN_CAP);
        self.cap == cap || (self.truncated.is_none() && cap.is_none_or(fits))
    }
}

impl BuildCache {
    /// Takes the window the last trim kept, if any.
    pub(super) fn take_window(&mut self) -> Option<KeptWindow> {
        self.window.take()
    }

    /// Keeps the window a trim left, for the next.
    pub(super) fn keep_window(&mut self, window: KeptWindow) {
        self.window = Some(window);
    }

    /// An empty cache.
    pub fn new() -> Self {
        BuildCache::default()
    }

    /// What the last build in this cache rendered and counted.
    pub fn stats(&self) -> BuildStats {
        self.stats
    }

    /// Forgets every rendered chunk: the next build renders all of them.
    pub fn clear(&mut self) {
        self.slots.clear();
        self.ids.clear();
    }

    /// Forgets the chunk at `index`, edited in place: the next build
    /// renders it again.
    pub fn forget_chunk(&mut self, index: usize) {
        self.forget(index);
    }

    /// Makes the cache serve a build of `state` under the compiled
    /// settings numbered `config` with `renderers`: cleared if filled under
    /// others, a slot emptied where its chunk's id changed, and the chunks
    /// of renderers that may write them otherwise this time forgotten.
    pub(crate) fn follow(
        &mut self,
        state: &MemoryState,
        (config, renderers): (u64, &RendererRegistry),
    ) {
        if self.rendered_under != Some(config) {
            self.clear();
            self.rendered_under = Some(config);
        }
        for (index, chunk) in state.chunks.iter().enumerate() {
            if self
                .ids
                .get(index)
                .and_then(Option::as_ref)
                .is_some_and(|id| id.as_str() != chunk.id)
            {
                self.forget(index);
            }
        }
        self.ids.truncate(state.chunks.len());
        self.slots.truncate(state.chunks.len());
        self.forget_unstable(renderers, state);
    }

    /// Empties the slots of the chunks of `state` whose renderer may
    /// write them differently in this build than in the last (see
    /// [`ChunkRenderer::deterministic`](crate::render::ChunkRenderer::deterministic)),
    /// so they are rendered again.
    pub(crate) fn forget_unstable(&mut self, renderers: &RendererRegistry, state: &MemoryState) {
        if renderers.all_deterministic() {
            return;
        }
        for (index, chunk) in state.chunks.iter().enumerate() {
            if !renderers.renderer_for(chunk).deterministic() {
                self.forget_rendering(index);
            }
        }
    }

    /// The chunk at `index` rendered under `cap`, from the cache or from
    /// `prepare`.
    pub(crate) fn prepared(
        &mut self,
        index: usize,
        cap: Option<usize>,
        prepare: impl FnOnce() -> Result<PreparedChunk>,
    ) -> Result<PreparedChunk> {
        if let Some(entry) = self
            .slots
            .get(index)
            .and_then(Option::as_ref)
            .filter(|e| e.serves(cap))
        {
            self.stats.chunks_cached += 1;
            return Ok(PreparedChunk {
                role: entry.role,
                part: Arc::clone(&entry.part),
                decision: entry
                    .truncated
                    .as_deref()
                    .copied()
                    .unwrap_or(Decision::Kept),
            });
        }
        let prepared = prepare()?;
        self.stats.chunks_rendered += 1;
        self.stats.tokens_counted += prepared.part.alone();
        if self.slots.len() <= index {
            self.slots.resize_with(index + 1, || None);
        }
        self.slots[index] = Some(Entry {
            part: Arc::clone(&prepared.part),
            stub: None,
            cap,
            truncated: match prepared.decision {
                Decision::Kept => None,
                decision => Some(Box::new(decision)),
            },
            role: prepared.role,
            stub_known: false,
        });
        Ok(prepared)
    }

    /// The tokens and role of the chunk at `index` as rendered under `cap`,
    /// if the cache holds it.
    pub(crate) fn peek(&self, index: usize, cap: Option<usize>) -> Option<(usize, Role)> {
        let entry = self.slots.get(index)?.as_ref()?;
        entry.serves(cap).then(|| (entry.part.alone(), entry.role))
    }

    /// Whether the slot of the chunk at `index` holds a rendering.
    pub(crate) fn holds(&self, index: usize) -> bool {
        self.slots.get(index).is_some_and(Option::is_some)
    }

    /// The role and counts of the chunk at `index` rendered whole (no cap
    /// cut it), if the cache holds them.
    pub(crate) fn whole(&self, index: usize) -> Option<(Role, &CountedText)> {
        let entry = self.slots.get(index)?.as_ref()?;
        entry
            .truncated
            .is_none()
            .then(|| (entry.role, entry.part.as_ref()))
    }

    /// Fills the empty slot of the chunk at `index` with counts kept
    /// elsewhere (a store) of its whole rendering, without the text; they
    /// were counted with `encoding`, as every slot must be
    /// ([`count_with`](BuildCache::count_with)).
    pub(crate) fn seed(&mut self, index: usize, role: Role, part: CountedText) {
        if self.slots.len() <= index {
            self.slots.resize_with(index + 1, || None);
        }
        self.slots[index].get_or_insert_with(|| Entry {
            part: Arc::new(part),
            stub: None,
            cap: None,
            truncated: None,
            role,
            stub_known: false,
        });
    }

    /// Gives back the text of the chunk at `index`, rendered whole again
    /// after the cache let it go, if it has the chunk's counts: rendering
    /// gives the same text, so the counts hold and nothing is counted.
    pub(crate) fn restore_whole(
        &mut self,
        index: usize,
        render: impl FnOnce() -> String,
    ) -> Option<PreparedChunk> {
        let entry = self.slots.get_mut(index)?.as_mut()?;
        if entry.truncated.is_some() || !entry.part.is_released() {
            return None;
        }
        entry.part = Arc::new(entry.part.with_text(render()));
        self.stats.chunks_rendered += 1;
        Some(PreparedChunk {
            role: entry.role,
            part: Arc::clone(&entry.part),
            decision: Decision::Kept,
        })
    }

    /// Tokens of the chunk at `index` before its cap cut it, if it did.
    pub(crate) fn truncated_from(&self, index: usize) -> Option<usize> {
        match self.slots.get(index)?.as_ref()?.truncated.as_deref()? {
            Decision::Truncated { tokens_before, .. } => Some(*tokens_before),
            _ => None,
        }
    }

    /// Counts a chunk the build took from the cache without asking for it.
    pub(crate) fn count_cached(&mut self) {
        self.stats.chunks_cached += 1;
    }

    /// The index of the oldest chunk not rendered yet (the number of
    /// chunks rendered when all are), as far as the slots tell.
    pub(crate) fn oldest_missing(&self) -> usize {
        self.slots
            .iter()
            .position(Option::is_none)
            .unwrap_or(self.slots.len())
    }

    /// The shared id of the chunk at `index`.
    pub(crate) fn id(&mut self, index: usize, id: &str) -> ChunkId {
        if self.ids.len() <= index {
            self.ids.resize_with(index + 1, || None);
        }
        self.ids[index]
            .get_or_insert_with(|| ChunkId::from(id))
            .clone()
    }

    /// The stub of the chunk at `index`, from the cache or from `stub`.
    pub(crate) fn stub(
        &mut self,
        index: usize,
        stub: impl FnOnce() -> Option<Arc<CountedText>>,
    ) -> Option<Arc<CountedText>> {
        match self.slots.get_mut(index).and_then(Option::as_mut) {
            Some(entry) if entry.stub_known => entry.stub.clone(),
            Some(entry) => {
                entry.stub = stub();
                entry.stub_known = true;
                entry.stub.clone()
            }
            None => stub(),
        }
    }

    /// Holds the build's own handles to the rendering and stub of the chunk
    /// at `index` where the build let their text go (see
    /// [`CountedText::released`]): the cache keeps no text the prompt does
    /// not show, and the two share one record of the counts.
    pub(crate) fn hold_released(
        &mut self,
        index: usize,
        part: &Arc<CountedText>,
        stub: Option<&Arc<CountedText>>,
    ) {
        let Some(entry) = self.slots.get_mut(index).and_then(Option::as_mut) else {
            return;
        };
        if part.is_released() && !entry.part.is_released() {
            entry.part = Arc::clone(part);
        }
        if let (Some(stub), Some(held)) = (stub, entry.stub.as_mut())
            && stub.is_released()
            && !held.is_released()
        {
            *held = Arc::clone(stub);
        }
    }

    /// Lets go of the texts of the chunk at `index`, its rendering and its
    /// stub, keeping their counts: the prompt no longer shows it.
    pub(crate) fn release_texts(&mut self, index: usize) {
        let Some(entry) = self.slots.get_mut(index).and_then(Option::as_mut) else {
            return;
        };
        if !entry.part.is_released() {
            entry.part = Arc::new(entry.part.released());
        }
        if let Some(stub) = entry.stub.as_mut().filter(|s| !s.is_released()) {
            *stub = Arc::new(stub.released());
        }
    }

    /// Empties the slot of the chunk at `index` (its id stays): it is
    /// rendered again by the next call to [`prepared`](BuildCache::prepared).
    pub(crate) fn forget_rendering(&mut self, index: usize) {
        if let Some(slot) = self.slots.get_mut(index) {
            *slot = None;
        }
    }

    /// Forgets the stub of the chunk at `index`: the next call to
    /// [`stub`](BuildCache::stub) makes it again.
    pub(crate) fn forget_stub(&mut self, index: usize) {
        if let Some(entry) = self.slots.get_mut(index).and_then(Option::as_mut) {
            entry.stub = None;
            entry.stub_known = false;
        }
    }

    /// Empties the slot of an edited chunk.
    pub(crate) fn forget(&mut self, index: usize) {
        self.forget_rendering(index);
        if let Some(id) = self.ids.get_mut(index) {
            *id = None;
        }
    }

    /// Removes the slot of a removed chunk, keeping the rest aligned.
    pub(crate) fn remove(&mut self, index: usize) {
        if index < self.slots.len() {
            self.slots.remove(index);
        }
        if index < self.ids.len() {
            self.ids.remove(index);
        }
    }

    /// Empties the slots if they were counted by another counter than
    /// `encoding` names: an estimate whose calibrated factor has risen
    /// since must not reuse the lower counts.
    pub(crate) fn count_with(&mut self, encoding: &str) {
        if self.counted_with != encoding {
            self.clear();
            self.counted_with = encoding.to_owned();
        }
    }

    /// Starts a build's statistics, and grows the slots with the session's
    /// chunks (see [`reserve`](BuildCache::reserve)).
    pub(crate) fn start_build(&mut self, capacity: usize) {
        self.stats = BuildStats::default();
        self.tally = None;
        self.reserve(capacity);
    }

    /// Grows the slots to `capacity`, the session's chunks': one growth per
    /// doubling of the session, not one per chunk past the last.
    pub(crate) fn reserve(&mut self, capacity: usize) {
        self.slots
            .reserve_exact(capacity.saturating_sub(self.slots.len()));
        self.ids
            .reserve_exact(capacity.saturating_sub(self.ids.len()));
    }
}
