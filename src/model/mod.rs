//! The input: a session's typed memory ([`MemoryState`](crate::MemoryState)
//! of [`MemoryChunk`](crate::MemoryChunk)s), read from JSON and checked,
//! with the types its chunks are made of (ids, kinds and roles, the list
//! builds share) and Anthropic's `context_management` request.

pub(crate) mod chunk_id;
pub(crate) mod compaction;
pub(crate) mod context_management;
pub(crate) mod memory;
pub(crate) mod memory_schema;
pub(crate) mod roles;
pub(crate) mod rows;
