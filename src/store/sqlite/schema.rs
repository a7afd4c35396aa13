//! The tables of a SQLite store, version by version.
//!
//! `MIGRATIONS[v]` takes a store from schema version `v` to `v + 1`; an
//! empty file is version 0. A migration never rewrites what an earlier
//! version stored, so every version's stores keep loading.

use rusqlite::{Connection, Transaction, TransactionBehavior, params};

use super::db_error;
use crate::error::Result;
use crate::store::NodeId;
use crate::store::errors::{check_schema_version, not_a_store};
use crate::store::migrate::{Migrations, SchemaTx};

/// The schema version this crate writes.
const CURRENT_VERSION: u32 = 6;

const MIGRATIONS: [&str; CURRENT_VERSION as usize] = [
    // 1: chats, chunks as nodes of a graph, branches and checkpoints.
    "CREATE TABLE schema_version (version INTEGER NOT NULL);
     INSERT INTO schema_version (version) VALUES (1);
     CREATE TABLE chats (
         id TEXT PRIMARY KEY,
         metadata TEXT NOT NULL DEFAULT '{}',
         system TEXT,
         active_branch TEXT NOT NULL,
         created_at INTEGER NOT NULL,
         updated_at INTEGER NOT NULL
     );
     -- AUTOINCREMENT: a deleted node's id is never given again, so a head
     -- a writer saw cannot come to name another node.
     CREATE TABLE nodes (
         id INTEGER PRIMARY KEY AUTOINCREMENT,
         chat TEXT NOT NULL REFERENCES chats (id),
         parent INTEGER REFERENCES nodes (id),
         position INTEGER NOT NULL,
         chunk_id TEXT NOT NULL,
         codec INTEGER NOT NULL,
         body TEXT NOT NULL
     );
     CREATE INDEX nodes_by_parent ON nodes (chat, parent);
     CREATE TABLE branches (
         chat TEXT NOT NULL REFERENCES chats (id),
         name TEXT NOT NULL,
         head INTEGER REFERENCES nodes (id),
         PRIMARY KEY (chat, name)
     );
     CREATE TABLE checkpoints (
         chat TEXT NOT NULL REFERENCES chats (id),
         name TEXT NOT NULL,
         node INTEGER REFERENCES nodes (id),
         PRIMARY KEY (chat, name)
     );",
    // 2: each chunk's token counts per rendering settings, and what
    // providers billed.
    "CREATE TABLE counts (
         node INTEGER NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
         key TEXT NOT NULL,
         value TEXT NOT NULL,
         PRIMARY KEY (node, key)
     ) WITHOUT ROWID;
     CREATE TABLE usage (
         chat TEXT NOT NULL REFERENCES chats (id),
         at INTEGER NOT NULL,
         model TEXT NOT NULL,
         input_tokens INTEGER NOT NULL,
         output_tokens INTEGER NOT NULL,
         base_tokens INTEGER
     );
     CREATE INDEX usage_by_chat ON usage (chat);
     UPDATE schema_version SET version = 2;",
    // 3: a version for the system lane, so a writer that saw an older one
    // is refused instead of overwriting it.
    "ALTER TABLE chats ADD COLUMN system_version INTEGER NOT NULL DEFAULT 0;
     UPDATE schema_version SET version = 3;",
    // 4: each node's jump (see `store::lineage`), filled in for the nodes
    // already there by `backfill_jumps`, and chunks found by id, so no verb
    // but an export reads a whole branch.
    "ALTER TABLE nodes ADD COLUMN jump INTEGER;
     CREATE INDEX nodes_by_chunk_id ON nodes (chat, chunk_id);
     UPDATE schema_version SET version = 4;",
    // 5: what each node's path holds (see `store::tally`), so a build reads
    // only the newest chunks; nodes stored before have none, and build by
    // reading every chunk.
    "ALTER TABLE nodes ADD COLUMN last_user INTEGER;
     ALTER TABLE nodes ADD COLUMN last_call INTEGER;
     ALTER TABLE nodes ADD COLUMN last_protected INTEGER;
     ALTER TABLE nodes ADD COLUMN classes TEXT;
     ALTER TABLE nodes ADD COLUMN call_id TEXT;
     CREATE INDEX nodes_by_call_id ON nodes (chat, call_id) WHERE call_id IS NOT NULL;
     ALTER TABLE counts ADD COLUMN tally TEXT;
     UPDATE schema_version SET version = 5;",
    // 6: each branch's last build, as the next build extends it (see
    // `engine::record`). No key on the head: a pruned head leaves a record
    // the next build finds stale.
    "CREATE TABLE builds (
         chat TEXT NOT NULL REFERENCES chats (id),
         branch TEXT NOT NULL,
         chunks INTEGER NOT NULL,
         record TEXT NOT NULL,
         PRIMARY KEY (chat, branch)
     ) WITHOUT ROWID;
     UPDATE schema_version SET version = 6;",
];

/// The first version whose nodes have jumps.
const JUMPS_SINCE: u32 = 4;

/// Brings the schema to [`CURRENT_VERSION`], in one transaction. A store
/// already there is only read, so readers do not queue behind writers.
pub(super) fn migrate(connection: &mut Connection, location: &str) -> Result<()> {
    let fail = db_error(location);
    let current = {
        let tx = connection.transaction().map_err(&fail)?;
        version(&tx, location)?
    };
    if current == CURRENT_VERSION {
        return Ok(());
    }
    let mut tx = connection
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(&fail)?;
    let version = version(&tx, location)?;
    let migrations = Migrations {
        steps: &MIGRATIONS,
        jumps_since: JUMPS_SINCE,
    };
    migrations.apply(&mut tx, location, version)?;
    tx.commit().map_err(&fail)
}

impl SchemaTx for Transaction<'_> {
    fn run(&mut self, sql: &str) -> Result<(), String> {
        self.execute_batch(sql).map_err(|e| e.to_string())
    }

    fn node_links(&mut self) -> Result<Vec<(NodeId, Option<NodeId>, i64)>, String> {
        let read = || -> rusqlite::Result<Vec<_>> {
            let mut select =
                self.prepare("SELECT id, parent, position FROM nodes ORDER BY position, id")?;
            let rows = select.query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?;
            rows.collect()
        };
        read().map_err(|e| e.to_string())
    }

    fn set_jumps(&mut self, jumps: &[(NodeId, Option<NodeId>)]) -> Result<(), String> {
        let write = || -> rusqlite::Result<()> {
            let mut update = self.prepare("UPDATE nodes SET jump = ?2 WHERE id = ?1")?;
            for (id, jump) in jumps {
                update.execute(params![id, jump])?;
            }
            Ok(())
        };
        write().map_err(|e| e.to_string())
    }
}

/// The store's schema version (0 for an empty file), refusing a file that
/// is no store and a version newer than this crate writes.
pub(super) fn version(tx: &Transaction<'_>, location: &str) -> Result<u32> {
    let fail = db_error(location);
    let has_table: bool = tx
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version')",
            [],
            |row| row.get(0),
        )
        .map_err(&fail)?;
    let version: u32 = if has_table {
        tx.query_row("SELECT version FROM schema_version", [], |row| row.get(0))
            .map_err(&fail)?
    } else {
        let other_tables: i64 = tx
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table'",
                [],
                |row| row.get(0),
            )
            .map_err(&fail)?;
        if other_tables > 0 {
            return Err(not_a_store(
                location,
                "the file is a SQLite database but not an agent-context store; give another path"
                    .into(),
            ));
        }
        0
    };
    check_schema_version(location, version, CURRENT_VERSION)?;
    Ok(version)
}
