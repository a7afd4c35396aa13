//! A session's cache of rendered, counted chunks.

use std::sync::Arc;

use crate::budget::Decision;
use crate::chunk_id::ChunkId;
use crate::memory::Role;
use crate::prepare::PreparedChunk;
use crate::tokens::parts::CountedText;

/// Work done by one build, for replay reports and benchmarks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct BuildStats {
    /// Chunks rendered and counted by this build (cache misses).
    pub chunks_rendered: usize,
    /// Tokens of the chunks this build rendered: the text it had to tokenize.
    pub tokens_counted: usize,
    /// Chunks served from the cache.
    pub chunks_cached: usize,
}

/// Rendered chunks, one slot per session chunk in the same order, each with
/// the cap it was rendered under and its stub once asked for. The session
/// keeps the slots aligned with its chunks (a new chunk gets an empty slot,
/// an edited one is emptied, a removed one removed) and clears everything
/// when a setting that shapes rendering changes. Slots by position spare
/// every build a hash lookup per chunk.
#[derive(Debug, Default)]
pub(crate) struct ChunkCache {
    slots: Vec<Option<Entry>>,
    /// Each chunk's id, shared by every report (aligned like `slots`).
    ids: Vec<Option<ChunkId>>,
    pub(crate) stats: BuildStats,
}

/// Laid out small: a session holds one per chunk.
#[derive(Debug)]
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
    fn prepared(&self) -> PreparedChunk {
        PreparedChunk {
            role: self.role,
            part: Arc::clone(&self.part),
            decision: self.truncated.as_deref().copied().unwrap_or(Decision::Kept),
        }
    }
}

impl ChunkCache {
    /// The chunk at `index` rendered under `cap`, from the cache or from `prepare`.
    pub(crate) fn prepared(
        &mut self,
        index: usize,
        cap: Option<usize>,
        prepare: impl FnOnce() -> PreparedChunk,
    ) -> PreparedChunk {
        if let Some(entry) = self
            .slots
            .get(index)
            .and_then(Option::as_ref)
            .filter(|e| e.cap == cap)
        {
            self.stats.chunks_cached += 1;
            return entry.prepared();
        }
        let prepared = prepare();
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
        prepared
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
            Some(entry) => {
                if !entry.stub_known {
                    entry.stub = stub();
                    entry.stub_known = true;
                }
                entry.stub.clone()
            }
            None => stub(),
        }
    }

    /// Puts a build's `part` and `stub` of the chunk at `index` in its
    /// entry, so that both hold one allocation: the same counts, with or
    /// without text (a build lets go of the text of what its prompt does
    /// not show, and later builds plan with the counts).
    pub(crate) fn share(
        &mut self,
        index: usize,
        part: &Arc<CountedText>,
        stub: Option<&Arc<CountedText>>,
    ) {
        if let Some(entry) = self.slots.get_mut(index).and_then(Option::as_mut) {
            entry.part = Arc::clone(part);
            if let Some(stub) = stub {
                entry.stub = Some(Arc::clone(stub));
                entry.stub_known = true;
            }
        }
    }

    /// Empties the slot of the chunk at `index` (its id stays): it is
    /// rendered again by the next call to [`prepared`](ChunkCache::prepared).
    pub(crate) fn forget_rendering(&mut self, index: usize) {
        if let Some(slot) = self.slots.get_mut(index) {
            *slot = None;
        }
    }

    /// Forgets the stub of the chunk at `index`: the next call to
    /// [`stub`](ChunkCache::stub) makes it again.
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

    pub(crate) fn clear(&mut self) {
        self.slots.clear();
        self.ids.clear();
    }

    /// Starts a build's statistics, and grows the slots with the session's
    /// chunks (`capacity` is theirs): one growth per doubling of the
    /// session, not one per chunk past the last.
    pub(crate) fn start_build(&mut self, capacity: usize) {
        self.stats = BuildStats::default();
        self.slots
            .reserve_exact(capacity.saturating_sub(self.slots.len()));
        self.ids
            .reserve_exact(capacity.saturating_sub(self.ids.len()));
    }
}
