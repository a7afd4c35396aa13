//! The rules every backend migrates its schema by: the migrations after
//! the store's version run in order, in the transaction the backend holds,
//! and a store written before nodes had jumps gets them, computed here.
//! Each backend keeps its own migrations' SQL and how it finds its
//! version.

use rustc_hash::FxHashMap;

use super::NodeId;
use super::errors::store_error;
use super::lineage::{Link, jump_for};
use crate::error::Result;

/// The statements a migration runs. Errors are the database's, as a line.
pub(crate) trait SchemaTx {
    /// Runs `sql`, one or more statements.
    fn run(&mut self, sql: &str) -> Result<(), String>;

    /// Every node's id, parent and position, by position then id (parents
    /// before children).
    fn node_links(&mut self) -> Result<Vec<(NodeId, Option<NodeId>, i64)>, String>;

    /// Sets each node's jump.
    fn set_jumps(&mut self, jumps: &[(NodeId, Option<NodeId>)]) -> Result<(), String>;
}

/// The versions of a backend's schema.
pub(crate) struct Migrations<'a> {
    /// `steps[v]` takes a store from version `v` to `v + 1`.
    pub(crate) steps: &'a [&'a str],
    /// The first version whose nodes have jumps.
    pub(crate) jumps_since: u32,
}

impl Migrations<'_> {
    /// Brings a store at `version` (0: empty) to the last version.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Store`](crate::ErrorKind::Store) naming the step that
    /// failed.
    pub(crate) fn apply(&self, tx: &mut impl SchemaTx, location: &str, version: u32) -> Result<()> {
        for (from, step) in self.steps.iter().enumerate().skip(version as usize) {
            tx.run(step).map_err(|e| {
                store_error(
                    location,
                    format!("migrating the schema from version {from}: {e}"),
                )
            })?;
        }
        if version > 0 && version < self.jumps_since {
            backfill_jumps(tx).map_err(|e| {
                store_error(
                    location,
                    format!("migrating the schema: linking nodes: {e}"),
                )
            })?;
        }
        Ok(())
    }
}

/// Gives every node its jump, parents before children: once, when a store
/// written before nodes had jumps is migrated.
fn backfill_jumps(tx: &mut impl SchemaTx) -> Result<(), String> {
    let mut links: FxHashMap<NodeId, Link> = FxHashMap::default();
    let mut jumps = Vec::new();
    for (id, parent, position) in tx.node_links()? {
        let parent = parent.and_then(|p| links.get(&p).copied());
        let jump = parent.map(|parent| jump_for(parent, |node| links.get(&node).copied()));
        links.insert(id, Link { id, position, jump });
        jumps.push((id, jump));
    }
    tx.set_jumps(&jumps)
}
