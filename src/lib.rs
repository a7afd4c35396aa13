//! agent-context
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod adapter;
pub mod budget;
mod builder;
mod error;
mod explain;
mod memory;
mod memory_schema;
mod message;
pub mod render;
pub mod tokens;

pub use builder::{ContextBuilder, DEFAULT_MODEL};
pub use error::{ChunkLocation, Error, ErrorKind, Result};
pub use memory::{ChunkKind, MemoryChunk, MemoryState, Retention, Role};
pub use message::{BuildResult, ContextMessage, Elision, Truncation};
