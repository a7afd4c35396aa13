//! A session's cache of rendered, counted chunks.

use std::sync::Arc;

use crate::chunk_id::ChunkId;
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

#[derive(Debug)]
struct Entry {
    cap: Option<usize>,
    prepared: PreparedChunk,
    /// `None` until asked for; then the stub, if the chunk has one.
    stub: Option<Option<Arc<CountedText>>>,
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
            return entry.prepared.clone();
        }
        let prepared = prepare();
        self.stats.chunks_rendered += 1;
        self.stats.tokens_counted += prepared.part.alone();
        if self.slots.len() <= index {
            self.slots.resize_with(index + 1, || None);
        }
        self.slots[index] = Some(Entry {
            cap,
            prepared: prepared.clone(),
            stub: None,
        });
        prepared
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
            Some(entry) => entry.stub.get_or_insert_with(stub).clone(),
            None => stub(),
        }
    }

    /// Lets go of the rendered text of the chunk at `index`, keeping its
    /// counts, and of its stub's text too unless `keep_stub`. The session
    /// does this for the chunks behind its cut: a later build plans with the
    /// counts and renders again the rare chunk that comes back.
    pub(crate) fn release(&mut self, index: usize, keep_stub: bool) {
        let Some(entry) = self.slots.get_mut(index).and_then(Option::as_mut) else {
            return;
        };
        release(&mut entry.prepared.part);
        if let (false, Some(Some(stub))) = (keep_stub, entry.stub.as_mut()) {
            release(stub);
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

    pub(crate) fn start_build(&mut self) {
        self.stats = BuildStats::default();
    }
}

fn release(part: &mut Arc<CountedText>) {
    if !part.is_released() {
        *part = Arc::new(part.released());
    }
}
