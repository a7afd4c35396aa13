//! The tables of a SQLite store, version by version.
//!
//! `MIGRATIONS[v]` takes a store from schema version `v` to `v + 1`; an
//! empty file is version 0. A migration never rewrites what an earlier
//! version stored, so every version's stores keep loading.

/// The schema version this crate writes.
pub(crate) const CURRENT_VERSION: u32 = 5;

pub(crate) const MIGRATIONS: [&str; CURRENT_VERSION as usize] = [
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
];

/// The first version whose nodes have jumps.
pub(crate) const JUMPS_SINCE: u32 = 4;
