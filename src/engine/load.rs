//! Loading a branch from the store into the engine's session, and the
//! system lane's stored form.

use super::ContextEngine;
use crate::error::{ErrorKind, Result};
use crate::json_input::value_from_str;
use crate::memory::{MemoryChunk, MemoryState};
use crate::memory_schema::{chunk_from_value, session_from_value};
use crate::session::ContextSession;
use crate::store::{CHUNK_CODEC, StoredChunk};

impl ContextEngine {
    /// Replaces the session by the branch as stored, seeded with the
    /// stored counts; pending changes are dropped.
    pub(super) fn load(&mut self) -> Result<()> {
        let key = self.session.count_key();
        // A build needs the tables (for the system prompt and markers, and
        // what the store has no counts for): they load while the store reads.
        self.session.builder().load_tables_in_background();
        let loaded = self.store.load(&self.chat, &self.branch, key.as_deref())?;
        let location = self.store.location();
        let mut state = match &loaded.system {
            Some(system) => system_lane(system, &location)?,
            None => MemoryState::new(),
        };
        state.chunks = loaded
            .chunks
            .iter()
            .enumerate()
            .map(|(index, stored)| decode_chunk(index, stored, &location))
            .collect::<Result<_>>()?;
        let mut session = ContextSession::new(self.session.builder().clone(), state)?;
        let counted = loaded.chunks.iter().enumerate();
        session.seed_counts(counted.filter_map(|(i, c)| Some((i, c.counts.as_deref()?))));
        self.uncounted = match key {
            Some(_) => (0..loaded.chunks.len())
                .filter(|&i| loaded.chunks[i].counts.is_none())
                .collect(),
            None => Vec::new(),
        };
        self.nodes = loaded.chunks.iter().map(|c| c.node).collect();
        self.head = loaded.head;
        self.session = session;
        self.replaced_from = None;
        self.system_changed = false;
        self.last_build = None;
        Ok(())
    }
}

/// A stored chunk, read with the codec it was written with.
fn decode_chunk(index: usize, stored: &StoredChunk, location: &str) -> Result<MemoryChunk> {
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

/// The system prompt and fragments of `state` as the store keeps them:
/// the session JSON with no chunks.
pub(super) fn system_lane_json(state: &MemoryState) -> String {
    let lane = MemoryState {
        system_prompt: state.system_prompt.clone(),
        fragments: state.fragments.clone(),
        ..MemoryState::default()
    };
    serde_json::to_string(&lane).unwrap_or_default()
}

fn system_lane(json: &str, location: &str) -> Result<MemoryState> {
    let value = value_from_str(json).map_err(|e| ErrorKind::Store {
        location: location.to_owned(),
        message: format!("the chat's stored system lane is not JSON: {e}"),
    })?;
    session_from_value(value)
}
