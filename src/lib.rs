//! agent-context
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod error;
mod memory;
mod memory_schema;
pub mod tokens;

pub use error::{ChunkLocation, Error, ErrorKind, Result};
pub use memory::{ChunkKind, MemoryChunk, MemoryState, Retention, Role};
