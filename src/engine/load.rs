//! Loading a branch from the store into the engine's session, and the
//! system lane's stored form.

use super::ContextEngine;
use crate::error::{ErrorKind, Result};
use crate::model::memory::{MemoryChunk, MemoryState};
use crate::model::memory_schema::{chunk_from_value, session_from_value};
use crate::session::ContextSession;
use crate::store::{CHUNK_CODEC, StoredChunk};
use crate::syntax::json_input::value_from_str;

impl ContextEngine {
    /// Drops pending changes and reads where the branch stands: its head,
    /// its length and the system lane, not its chunks.
    pub(super) fn load(&mut self) -> Result<()> {
        let at = self.nodes().head(&self.chat, &self.branch)?;
        let location = self.store.location();
        let lane = match &at.system {
            Some(system) => system_lane(system, &location)?,
            None => MemoryState::new(),
        };
        self.session = ContextSession::with_config(self.session.config().clone(), lane)?;
        self.head = at.head;
        self.stored = at.chunks;
        self.nodes = None;
        self.system_version = at.system_version;
        self.replaced_from = None;
        self.system_changed = false;
        self.uncounted = Vec::new();
        self.last_build = None;
        Ok(())
    }

    /// A session of the system lane alone (its pending changes kept).
    pub(super) fn lane_session(&self) -> Result<ContextSession> {
        ContextSession::with_config(self.session.config().clone(), lane_of(self.held()))
    }

    /// Starts loading the tokenizer tables a build counts with, so they
    /// load while the store reads (the system prompt, the markers and what
    /// the store has no counts for are counted). Only builds do this: a
    /// command that only reads chunks never loads them, and a save loads
    /// them when it counts the chunks whose counts it keeps.
    pub(super) fn load_tables_while_reading(&self) {
        self.session.builder().load_tables_in_background();
    }

    /// Reads the stored chunks at the engine's head into the session, before
    /// the pending ones, seeded with their stored counts; once.
    pub(super) fn load_chunks(&mut self) -> Result<()> {
        if self.nodes.is_some() {
            return Ok(());
        }
        let key = self.session.count_key();
        let location = self.store.location();
        let (mut chunks, mut nodes, mut counts) = (Vec::new(), Vec::new(), Vec::new());
        self.nodes()
            .for_each_chunk(&self.chat, self.head, key.as_deref(), &mut |stored| {
                chunks.push(decode_chunk(chunks.len(), &stored, &location)?);
                nodes.push(stored.node);
                counts.push(stored.counts);
                Ok(())
            })?;
        let mut state = self.session.state().clone();
        chunks.append(&mut state.chunks);
        state.chunks = chunks;
        let mut session = ContextSession::with_config(self.session.config().clone(), state)?;
        let counted = counts.iter().enumerate();
        session.seed_counts(counted.filter_map(|(i, c)| Some((i, c.as_deref()?))));
        self.uncounted = match key {
            Some(_) => (0..counts.len()).filter(|&i| counts[i].is_none()).collect(),
            None => Vec::new(),
        };
        self.stored = nodes.len();
        self.nodes = Some(nodes);
        self.session = session;
        Ok(())
    }
}

/// A stored chunk, read with the codec it was written with.
pub(super) fn decode_chunk(
    index: usize,
    stored: &StoredChunk,
    location: &str,
) -> Result<MemoryChunk> {
    let unreadable = |message: String| ErrorKind::Store {
        location: location.to_owned(),
        message: format!("stored chunk {index} (node {}): {message}", stored.node),
    };
    if stored.codec > CHUNK_CODEC {
        return Err(unreadable(format!(
            "written with chunk codec {}, and this version reads up to {CHUNK_CODEC}: upgrade \
             agent-context",
            stored.codec
        ))
        .into());
    }
    let value = value_from_str(&stored.json).map_err(|e| unreadable(e.to_string()))?;
    chunk_from_value(index, value)
}

/// `chunk` (the `index`-th of the session) as the store keeps it, refused
/// unless it reads back as the same chunk: a chunk built in Rust can hold
/// what its JSON cannot say (`data: null` reads back as no data, a
/// `created_at` object is not read at all), and storing it would change it
/// or make the chat unreadable.
pub(super) fn stored_json(chunk: &MemoryChunk, index: usize) -> Result<String> {
    let refuse = |message: String| ErrorKind::Chunk {
        location: crate::error::ChunkLocation {
            index,
            id: Some(chunk.id.clone()),
        },
        field: "(chunk)".into(),
        message,
    };
    let json = serde_json::to_string(chunk)
        .map_err(|e| refuse(format!("cannot be written as JSON: {e}")))?;
    let back = value_from_str(&json)
        .map_err(|e| refuse(e.to_string()))
        .and_then(|value| chunk_from_value(index, value).map_err(|e| refuse(e.to_string())));
    match back {
        Ok(back) if &back == chunk => Ok(json),
        Ok(_) => Err(refuse(
            "its JSON reads back as another chunk (is `data` null?); store what the session \
             format can say"
                .into(),
        )
        .into()),
        Err(error) => Err(error.into()),
    }
}

/// The system lane of `state` (system prompt, fragments and
/// `context_management`) as the store keeps it: the session JSON with no
/// chunks. A lane without `context_management`, as stores written before
/// it was kept hold, reads as none.
pub(super) fn system_lane_json(state: &MemoryState) -> String {
    serde_json::to_string(&lane_of(state)).unwrap_or_default()
}

/// The system lane of `state`, without its chunks.
pub(super) fn lane_of(state: &MemoryState) -> MemoryState {
    MemoryState {
        system_prompt: state.system_prompt.clone(),
        fragments: state.fragments.clone(),
        context_management: state.context_management.clone(),
        ..MemoryState::default()
    }
}

fn system_lane(json: &str, location: &str) -> Result<MemoryState> {
    let value = value_from_str(json).map_err(|e| ErrorKind::Store {
        location: location.to_owned(),
        message: format!("the chat's stored system lane is not JSON: {e}"),
    })?;
    session_from_value(value)
}
