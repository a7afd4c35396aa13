//! The statements of a SQLite store: one per primitive of
//! [`Tx`]. Ids and names are `TEXT`; a write transaction holds the file's
//! write lock from its start, so writers take turns without locking rows.

use rusqlite::{OptionalExtension, Row, Transaction, params};

use super::db_error;
use crate::error::Result;
use crate::store::backend::{ChatRow, CountBase, CountRow, Found, NodeRow, PathRow, ReadBack, Tx};
use crate::store::errors::store_error;
use crate::store::lineage::Link;
use crate::store::tally::{ClassTally, NodeTallies, TokenTally};
use crate::store::{CHUNK_CODEC, CheckpointSummary, NodeId, NodeKey, StoredChunk, Usage};

/// A transaction of a [`SqliteStore`](super::SqliteStore).
pub(crate) struct SqliteTx<'a> {
    pub(super) tx: Transaction<'a>,
    pub(super) location: &'a str,
}

const CHAT: &str = "SELECT id, metadata, active_branch, created_at, updated_at FROM chats";

impl SqliteTx<'_> {
    fn fail(&self) -> impl Fn(rusqlite::Error) -> crate::Error + '_ {
        db_error(self.location)
    }

    /// Runs `sql` with `params`.
    fn run(&self, sql: &str, params: impl rusqlite::Params) -> Result<usize> {
        self.tx
            .prepare_cached(sql)
            .and_then(|mut statement| statement.execute(params))
            .map_err(self.fail())
    }

    /// The row `sql` finds with `params`, if any, read by `read`.
    fn one<T>(
        &self,
        sql: &str,
        params: impl rusqlite::Params,
        read: impl FnOnce(&Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Option<T>> {
        self.tx
            .prepare_cached(sql)
            .and_then(|mut statement| statement.query_row(params, read).optional())
            .map_err(self.fail())
    }

    /// Every row `sql` finds with `params`, each read by `read`.
    fn all<T>(
        &self,
        sql: &str,
        params: impl rusqlite::Params,
        read: impl FnMut(&Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Vec<T>> {
        self.tx
            .prepare_cached(sql)
            .and_then(|mut statement| statement.query_map(params, read)?.collect())
            .map_err(self.fail())
    }
}

fn chat_row(row: &Row<'_>) -> rusqlite::Result<ChatRow> {
    Ok(ChatRow {
        id: row.get(0)?,
        metadata: row.get(1)?,
        active_branch: row.get(2)?,
        created_at_ms: row.get(3)?,
        updated_at_ms: row.get(4)?,
    })
}

/// A node's tallies, from four columns starting at `first`.
fn tallies_at(row: &Row<'_>, first: usize) -> rusqlite::Result<NodeTallies> {
    let classes: Option<String> = row.get(first + 3)?;
    Ok(NodeTallies {
        last_user: row.get(first)?,
        last_call: row.get(first + 1)?,
        last_protected: row.get(first + 2)?,
        classes: classes.as_deref().and_then(ClassTally::decode),
    })
}

/// A token tally from its column.
fn token_tally_at(row: &Row<'_>, index: usize) -> rusqlite::Result<Option<TokenTally>> {
    let text: Option<String> = row.get(index)?;
    Ok(text.as_deref().and_then(TokenTally::decode))
}

fn as_usize(n: i64) -> usize {
    usize::try_from(n).unwrap_or(0)
}

impl Tx for SqliteTx<'_> {
    fn insert_chat(&mut self, chat: &str, branch: &str, now: i64) -> Result<bool> {
        let created = self.run(
            "INSERT INTO chats (id, metadata, active_branch, created_at, updated_at) \
             VALUES (?1, '{}', ?2, ?3, ?3) ON CONFLICT (id) DO NOTHING",
            params![chat, branch, now],
        )?;
        Ok(created > 0)
    }

    fn chat_row(&mut self, chat: &str) -> Result<Option<ChatRow>> {
        self.one(&format!("{CHAT} WHERE id = ?1"), [chat], chat_row)
    }

    fn chat_rows(&mut self) -> Result<Vec<ChatRow>> {
        self.all(&format!("{CHAT} ORDER BY id"), [], chat_row)
    }

    fn lock_chat(&mut self, chat: &str) -> Result<Option<u64>> {
        // The transaction holds the file's write lock already.
        let version = self.one(
            "SELECT system_version FROM chats WHERE id = ?1",
            [chat],
            |row| row.get::<_, i64>(0),
        )?;
        Ok(version.map(|v| u64::try_from(v).unwrap_or(0)))
    }

    fn system_lane(&mut self, chat: &str) -> Result<Option<(Option<String>, u64)>> {
        self.one(
            "SELECT system, system_version FROM chats WHERE id = ?1",
            [chat],
            |row| {
                Ok((
                    row.get(0)?,
                    u64::try_from(row.get::<_, i64>(1)?).unwrap_or(0),
                ))
            },
        )
    }

    fn set_metadata(&mut self, chat: &str, metadata: &str, now: i64) -> Result<()> {
        self.run(
            "UPDATE chats SET metadata = ?2, updated_at = ?3 WHERE id = ?1",
            params![chat, metadata, now],
        )?;
        Ok(())
    }

    fn touch(&mut self, chat: &str, system: Option<&str>, now: i64) -> Result<()> {
        match system {
            Some(system) => self.run(
                "UPDATE chats SET system = ?2, system_version = system_version + 1, \
                 updated_at = ?3 WHERE id = ?1",
                params![chat, system, now],
            ),
            None => self.run(
                "UPDATE chats SET updated_at = ?2 WHERE id = ?1",
                params![chat, now],
            ),
        }?;
        Ok(())
    }

    fn set_active(&mut self, chat: &str, branch: &str, now: i64) -> Result<()> {
        self.run(
            "UPDATE chats SET active_branch = ?2, updated_at = ?3 WHERE id = ?1",
            params![chat, branch, now],
        )?;
        Ok(())
    }

    fn branch_head(&mut self, chat: &str, branch: &str) -> Result<Option<Option<NodeId>>> {
        self.one(
            "SELECT head FROM branches WHERE chat = ?1 AND name = ?2",
            params![chat, branch],
            |row| row.get(0),
        )
    }

    fn insert_branch(&mut self, chat: &str, name: &str, head: Option<NodeId>) -> Result<()> {
        self.run(
            "INSERT INTO branches (chat, name, head) VALUES (?1, ?2, ?3)",
            params![chat, name, head],
        )?;
        Ok(())
    }

    fn set_head(&mut self, chat: &str, branch: &str, head: Option<NodeId>) -> Result<()> {
        self.run(
            "UPDATE branches SET head = ?3 WHERE chat = ?1 AND name = ?2",
            params![chat, branch, head],
        )?;
        Ok(())
    }

    fn branch_rows(&mut self, chat: &str) -> Result<Vec<(String, Option<NodeId>, usize)>> {
        self.all(
            "SELECT b.name, b.head, COALESCE(n.position + 1, 0) FROM branches b \
             LEFT JOIN nodes n ON n.id = b.head AND n.chat = b.chat \
             WHERE b.chat = ?1 ORDER BY b.name",
            [chat],
            |row| Ok((row.get(0)?, row.get(1)?, as_usize(row.get(2)?))),
        )
    }

    fn set_checkpoint(&mut self, chat: &str, name: &str, node: Option<NodeId>) -> Result<()> {
        self.run(
            "INSERT INTO checkpoints (chat, name, node) VALUES (?1, ?2, ?3) \
             ON CONFLICT (chat, name) DO UPDATE SET node = excluded.node",
            params![chat, name, node],
        )?;
        Ok(())
    }

    fn checkpoints(&mut self, chat: &str) -> Result<Vec<CheckpointSummary>> {
        self.all(
            "SELECT name, node FROM checkpoints WHERE chat = ?1 ORDER BY name",
            [chat],
            |row| {
                Ok(CheckpointSummary {
                    name: row.get(0)?,
                    node: row.get(1)?,
                })
            },
        )
    }

    fn last_build(&mut self, chat: &str, branch: &str) -> Result<Option<String>> {
        self.one(
            "SELECT record FROM builds WHERE chat = ?1 AND branch = ?2",
            [chat, branch],
            |row| row.get(0),
        )
    }

    fn put_last_build(
        &mut self,
        chat: &str,
        branch: &str,
        chunks: i64,
        record: &str,
    ) -> Result<()> {
        self.run(
            "INSERT INTO builds (chat, branch, chunks, record) VALUES (?1, ?2, ?3, ?4) \
             ON CONFLICT (chat, branch) DO UPDATE \
             SET chunks = excluded.chunks, record = excluded.record \
             WHERE builds.chunks <= excluded.chunks",
            params![chat, branch, chunks, record],
        )?;
        Ok(())
    }

    fn insert_usage(&mut self, chat: &str, usage: &Usage, now: i64) -> Result<()> {
        let as_i64 = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        self.run(
            "INSERT INTO usage (chat, at, model, input_tokens, output_tokens, base_tokens) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                chat,
                now,
                usage.model,
                as_i64(usage.input_tokens),
                as_i64(usage.output_tokens),
                usage.base_tokens.map(as_i64),
            ],
        )?;
        Ok(())
    }

    fn usage(&mut self, chat: &str) -> Result<Vec<Usage>> {
        let as_u64 = |n: i64| u64::try_from(n).unwrap_or(0);
        self.all(
            "SELECT model, input_tokens, output_tokens, base_tokens FROM usage \
             WHERE chat = ?1 ORDER BY rowid",
            [chat],
            |row| {
                Ok(Usage {
                    model: row.get(0)?,
                    input_tokens: as_u64(row.get(1)?),
                    output_tokens: as_u64(row.get(2)?),
                    base_tokens: row.get::<_, Option<i64>>(3)?.map(as_u64),
                })
            },
        )
    }

    fn position_of(&mut self, chat: &str, node: NodeId) -> Result<Option<i64>> {
        self.one(
            "SELECT position FROM nodes WHERE id = ?1 AND chat = ?2",
            params![node, chat],
            |row| row.get(0),
        )
    }

    fn read_back(&mut self, chat: &str, walk: ReadBack<'_>) -> Result<Vec<StoredChunk>> {
        self.all(
            "WITH RECURSIVE back (id, n) AS ( \
               SELECT ?2, 1 WHERE ?3 > 0 \
               UNION ALL \
               SELECT n.parent, back.n + 1 FROM nodes n JOIN back ON n.id = back.id \
               WHERE n.chat = ?1 AND n.parent IS NOT NULL AND back.n < ?3) \
             SELECT n.id, n.parent, n.position, n.codec, n.body, c.value FROM back \
             JOIN nodes n ON n.id = back.id AND n.chat = ?1 \
             LEFT JOIN counts c ON c.node = n.id AND c.key = ?4 \
             ORDER BY back.n",
            params![chat, walk.from, walk.limit, walk.count_key],
            stored_chunk,
        )
    }

    fn read_nodes(
        &mut self,
        chat: &str,
        nodes: &[NodeId],
        count_key: Option<&str>,
    ) -> Result<Vec<StoredChunk>> {
        let ids = serde_json::to_string(nodes).unwrap_or_default();
        // CROSS JOIN keeps the ids the outer loop: each is one lookup by
        // key, whatever the planner would guess of the chat's index.
        self.all(
            "SELECT n.id, n.parent, n.position, n.codec, n.body, c.value FROM json_each(?2) j \
             CROSS JOIN nodes n ON n.id = j.value \
             LEFT JOIN counts c ON c.node = n.id AND c.key = ?3 \
             WHERE n.chat = ?1",
            params![chat, ids, count_key],
            stored_chunk,
        )
    }

    fn ancestor(&mut self, chat: &str, node: NodeId, position: i64) -> Result<Option<NodeId>> {
        self.one(
            "WITH RECURSIVE climb (id, position, parent, jump) AS ( \
               SELECT id, position, parent, jump FROM nodes WHERE id = ?2 AND chat = ?1 \
               UNION ALL \
               SELECT n.id, n.position, n.parent, n.jump FROM climb c \
               JOIN nodes j ON j.id = c.jump \
               JOIN nodes n ON n.id = CASE WHEN j.position >= ?3 THEN c.jump ELSE c.parent END \
               WHERE c.position > ?3) \
             SELECT id FROM climb WHERE position = ?3",
            params![chat, node, position],
            |row| row.get(0),
        )
    }

    fn nodes_with(&mut self, chat: &str, key: NodeKey<'_>, up_to: i64) -> Result<Vec<Found>> {
        let (sql, value) = match key {
            NodeKey::ChunkId(id) => (
                "SELECT id, position, last_call = id FROM nodes \
                 WHERE chat = ?1 AND chunk_id = ?2 AND position <= ?3 \
                 ORDER BY position DESC, id DESC",
                id,
            ),
            NodeKey::CallId(id) => (
                "SELECT id, position, last_call = id FROM nodes \
                 WHERE chat = ?1 AND call_id = ?2 AND position <= ?3 \
                 ORDER BY position DESC, id DESC",
                id,
            ),
        };
        self.all(sql, params![chat, value, up_to], |row| {
            let call: Option<bool> = row.get(2)?;
            Ok(Found {
                node: row.get(0)?,
                position: as_usize(row.get(1)?),
                call: call.unwrap_or(false),
            })
        })
    }

    fn path_row(&mut self, chat: &str, node: NodeId, count_key: &str) -> Result<Option<PathRow>> {
        self.one(
            "SELECT n.position, n.last_user, n.last_call, n.last_protected, n.classes, \
             c.tally FROM nodes n LEFT JOIN counts c ON c.node = n.id AND c.key = ?3 \
             WHERE n.id = ?2 AND n.chat = ?1",
            params![chat, node, count_key],
            |row| {
                Ok(PathRow {
                    position: row.get(0)?,
                    tallies: tallies_at(row, 1)?,
                    tokens: token_tally_at(row, 5)?,
                })
            },
        )
    }

    fn tallies(&mut self, node: NodeId) -> Result<Option<NodeTallies>> {
        self.one(
            "SELECT last_user, last_call, last_protected, classes FROM nodes WHERE id = ?1",
            [node],
            |row| tallies_at(row, 0),
        )
    }

    fn token_tally(&mut self, node: NodeId, key: &str) -> Result<Option<TokenTally>> {
        let tally = self.one(
            "SELECT tally FROM counts WHERE node = ?1 AND key = ?2",
            params![node, key],
            |row| token_tally_at(row, 0),
        )?;
        Ok(tally.flatten())
    }

    fn jump_chain(&mut self, chat: &str, node: NodeId) -> Result<Vec<Link>> {
        self.all(
            "WITH RECURSIVE chain (id, position, jump, n) AS ( \
               SELECT id, position, jump, 0 FROM nodes WHERE id = ?2 AND chat = ?1 \
               UNION ALL \
               SELECT n.id, n.position, n.jump, c.n + 1 FROM nodes n \
               JOIN chain c ON n.id = c.jump) \
             SELECT id, position, jump FROM chain ORDER BY n",
            params![chat, node],
            |row| {
                Ok(Link {
                    id: row.get(0)?,
                    position: row.get(1)?,
                    jump: row.get(2)?,
                })
            },
        )
    }

    fn new_node_ids(&mut self, count: usize) -> Result<Vec<NodeId>> {
        // The ids `AUTOINCREMENT` would give, taken while the transaction
        // holds the write lock: past every id the table ever held.
        let last: NodeId = self
            .one(
                "SELECT max(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'nodes'), 0), \
                 COALESCE((SELECT max(id) FROM nodes), 0))",
                [],
                |row| row.get(0),
            )?
            .unwrap_or(0);
        let count = NodeId::try_from(count).unwrap_or(NodeId::MAX);
        match last.checked_add(count) {
            Some(_) => Ok((1..=count).map(|n| last + n).collect()),
            None => Err(store_error(self.location, "no node ids are left".into())),
        }
    }

    fn insert_nodes(&mut self, chat: &str, nodes: &[NodeRow<'_>]) -> Result<()> {
        for node in nodes {
            let tallies = &node.tallies;
            self.run(
                "INSERT INTO nodes (id, chat, parent, position, chunk_id, codec, body, jump, \
                 last_user, last_call, last_protected, classes, call_id) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
                params![
                    node.link.id,
                    chat,
                    node.parent,
                    node.link.position,
                    node.chunk.chunk_id,
                    CHUNK_CODEC,
                    node.chunk.json,
                    node.link.jump,
                    tallies.last_user,
                    tallies.last_call,
                    tallies.last_protected,
                    tallies.classes.map(|c| c.encode()),
                    node.chunk.meta.call_id,
                ],
            )?;
        }
        Ok(())
    }

    fn insert_counts(&mut self, counts: &[CountRow<'_>]) -> Result<()> {
        for count in counts {
            self.run(
                "INSERT INTO counts (node, key, value, tally) VALUES (?1, ?2, ?3, ?4) \
                 ON CONFLICT (node, key) DO NOTHING",
                params![
                    count.node,
                    count.key,
                    count.value,
                    count.tally.map(|t| t.encode())
                ],
            )?;
        }
        Ok(())
    }

    fn count_bases(&mut self, chat: &str, key: &str, nodes: &[NodeId]) -> Result<Vec<CountBase>> {
        let mut bases = Vec::with_capacity(nodes.len());
        for &node in nodes {
            let base = self.one(
                "SELECT n.parent, p.tally, o.node IS NOT NULL, o.tally FROM nodes n \
                 LEFT JOIN counts p ON p.node = n.parent AND p.key = ?3 \
                 LEFT JOIN counts o ON o.node = n.id AND o.key = ?3 \
                 WHERE n.chat = ?1 AND n.id = ?2",
                params![chat, node, key],
                |row| {
                    let own = row.get::<_, bool>(2)?;
                    Ok(CountBase {
                        node,
                        parent: row.get(0)?,
                        parent_tally: token_tally_at(row, 1)?,
                        own: own.then(|| token_tally_at(row, 3)).transpose()?,
                    })
                },
            )?;
            bases.extend(base);
        }
        Ok(bases)
    }

    fn reached(&mut self, chat: &str, node: NodeId) -> Result<bool> {
        let reached = self.one(
            &format!(
                "{BELOW} SELECT EXISTS (SELECT 1 FROM branches WHERE chat = ?1 AND head IN below) \
                 OR EXISTS (SELECT 1 FROM checkpoints WHERE chat = ?1 AND node IN below)"
            ),
            params![chat, node],
            |row| row.get(0),
        )?;
        Ok(reached.unwrap_or(false))
    }

    fn delete_below(&mut self, chat: &str, node: NodeId) -> Result<()> {
        self.run(
            &format!("{BELOW} DELETE FROM nodes WHERE chat = ?1 AND id IN below"),
            params![chat, node],
        )?;
        Ok(())
    }
}

/// `below`: node `?2` and every node under it.
const BELOW: &str = "WITH RECURSIVE below (id) AS ( \
       SELECT ?2 \
       UNION ALL \
       SELECT n.id FROM nodes n JOIN below b ON n.parent = b.id WHERE n.chat = ?1)";

/// A chunk as `SELECT n.id, n.parent, n.position, n.codec, n.body, c.value`
/// reads it.
fn stored_chunk(row: &Row<'_>) -> rusqlite::Result<StoredChunk> {
    Ok(StoredChunk {
        node: row.get(0)?,
        parent: row.get(1)?,
        position: as_usize(row.get(2)?),
        codec: row.get(3)?,
        json: row.get(4)?,
        counts: row.get(5)?,
    })
}
