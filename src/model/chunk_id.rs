//! [`ChunkId`]: a chunk id shared between a session and every build's report.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize};
use smallvec::SmallVec;

use crate::syntax::str_like::str_like;

/// A chunk's id as it appears in a [`BuildResult`](crate::BuildResult).
///
/// A report names every chunk of the session, every turn; sharing one
/// allocation per id keeps that from copying thousands of strings. It reads
/// and compares like a `&str`.
#[derive(Clone, Serialize)]
#[serde(transparent)]
pub struct ChunkId(Arc<str>, #[serde(skip)] u64);

impl ChunkId {
    /// The id as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A 64-bit hash of the id, computed once: a session compares each
    /// build's chunks with the previous build's cut by this hash.
    pub(crate) fn fingerprint(&self) -> u64 {
        self.1
    }
}

/// The hash [`ChunkId::fingerprint`] holds, for ids not yet wrapped.
pub(crate) fn fingerprint(id: &str) -> u64 {
    let mut hasher = rustc_hash::FxHasher::default();
    id.hash(&mut hasher);
    hasher.finish()
}

impl From<&str> for ChunkId {
    fn from(id: &str) -> Self {
        ChunkId(Arc::from(id), fingerprint(id))
    }
}

/// Read from a report (`--previous`): the id's text.
impl<'de> Deserialize<'de> for ChunkId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let id = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Ok(ChunkId::from(&*id))
    }
}

impl fmt::Debug for ChunkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl PartialEq for ChunkId {
    fn eq(&self, other: &Self) -> bool {
        // A session shares one allocation per id: equal pointers decide.
        self.1 == other.1 && (Arc::ptr_eq(&self.0, &other.0) || self.0 == other.0)
    }
}

impl Eq for ChunkId {}

impl Hash for ChunkId {
    /// Hashes like the `str` it holds, so maps keyed by ids can be looked up by `&str`.
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.hash(state);
    }
}

impl PartialOrd for ChunkId {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ChunkId {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.cmp(&other.0)
    }
}

str_like!(ChunkId);

/// The ids of the chunks in one message, in order: read like a slice of
/// [`ChunkId`]s. Held inline up to four (most messages hold a few chunks).
#[derive(Clone, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct ChunkIds(SmallVec<[ChunkId; 4]>);

impl ChunkIds {
    /// The ids as a slice.
    pub fn as_slice(&self) -> &[ChunkId] {
        &self.0
    }
}

impl std::ops::Deref for ChunkIds {
    type Target = [ChunkId];

    fn deref(&self) -> &[ChunkId] {
        &self.0
    }
}

impl fmt::Debug for ChunkIds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl FromIterator<ChunkId> for ChunkIds {
    fn from_iter<I: IntoIterator<Item = ChunkId>>(ids: I) -> Self {
        ChunkIds(ids.into_iter().collect())
    }
}

impl Extend<ChunkId> for ChunkIds {
    fn extend<I: IntoIterator<Item = ChunkId>>(&mut self, ids: I) {
        self.0.extend(ids);
    }
}

impl<'a> IntoIterator for &'a ChunkIds {
    type Item = &'a ChunkId;
    type IntoIter = std::slice::Iter<'a, ChunkId>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl<U> PartialEq<[U]> for ChunkIds
where
    ChunkId: PartialEq<U>,
{
    fn eq(&self, other: &[U]) -> bool {
        self.0.len() == other.len() && self.0.iter().zip(other).all(|(a, b)| a == b)
    }
}

impl<U, const N: usize> PartialEq<[U; N]> for ChunkIds
where
    ChunkId: PartialEq<U>,
{
    fn eq(&self, other: &[U; N]) -> bool {
        *self == other[..]
    }
}

impl<U> PartialEq<Vec<U>> for ChunkIds
where
    ChunkId: PartialEq<U>,
{
    fn eq(&self, other: &Vec<U>) -> bool {
        *self == other[..]
    }
}
