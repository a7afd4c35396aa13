//! [`ChunkId`]: a chunk id shared between a session and every build's report.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use serde::Serialize;

/// A chunk's id as it appears in a [`BuildResult`](crate::BuildResult).
///
/// A report names every chunk of the session, every turn; sharing one
/// allocation per id keeps that from copying thousands of strings. It reads
/// and compares like a `&str`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct ChunkId(Arc<str>);

impl ChunkId {
    /// The id as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<&str> for ChunkId {
    fn from(id: &str) -> Self {
        ChunkId(Arc::from(id))
    }
}

impl Deref for ChunkId {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for ChunkId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for ChunkId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ChunkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl PartialEq<str> for ChunkId {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for ChunkId {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

impl PartialEq<String> for ChunkId {
    fn eq(&self, other: &String) -> bool {
        *self.0 == **other
    }
}

impl PartialEq<ChunkId> for String {
    fn eq(&self, other: &ChunkId) -> bool {
        **self == *other.0
    }
}

impl PartialEq<ChunkId> for str {
    fn eq(&self, other: &ChunkId) -> bool {
        *self == *other.0
    }
}

impl PartialEq<ChunkId> for &str {
    fn eq(&self, other: &ChunkId) -> bool {
        **self == *other.0
    }
}
