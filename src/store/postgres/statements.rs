//! The statements of a PostgreSQL store: one per primitive of [`Tx`],
//! typed, each a single round trip (a save's nodes and counts are inserted
//! from arrays). Ids and names a caller chooses are `BYTEA`, written as
//! UTF-8; a write locks its chat's row (`SELECT … FOR UPDATE`) so writers
//! to one chat take turns.

use postgres::types::{FromSql, ToSql, Type};
use postgres::{Row, Transaction};

use super::db_error;
use crate::error::Result;
use crate::store::backend::{ChatRow, CountBase, CountRow, Found, NodeRow, PathRow, ReadBack, Tx};
use crate::store::errors::store_error;
use crate::store::lineage::Link;
use crate::store::tally::{ClassTally, NodeTallies, TokenTally};
use crate::store::{CHUNK_CODEC, CheckpointSummary, NodeId, NodeKey, StoredChunk, Usage};

/// A transaction of a [`PostgresStore`](super::PostgresStore).
pub(crate) struct PgTx<'a> {
    pub(super) tx: Transaction<'a>,
    pub(super) location: &'a str,
}

/// A statement's parameters, each with its type.
type Params<'p> = [(&'p (dyn ToSql + Sync), Type)];

/// The columns of a chat's row, in [`PgTx::chat_row_of`]'s order.
const CHAT: &str = "SELECT id, metadata, active_branch, created_at, updated_at FROM chats";

impl PgTx<'_> {
    fn fail(&self) -> impl Fn(postgres::Error) -> crate::Error + '_ {
        db_error(self.location)
    }

    /// Runs `sql`; the rows it changed.
    pub(super) fn run(&mut self, sql: &str, params: &Params<'_>) -> Result<u64> {
        let fail = db_error(self.location);
        self.tx.execute_typed(sql, params).map_err(fail)
    }

    /// The row `sql` finds, if any.
    fn one(&mut self, sql: &str, params: &Params<'_>) -> Result<Option<Row>> {
        let fail = db_error(self.location);
        self.tx.query_typed_opt(sql, params).map_err(fail)
    }

    /// Every row `sql` finds.
    fn all(&mut self, sql: &str, params: &Params<'_>) -> Result<Vec<Row>> {
        let fail = db_error(self.location);
        self.tx.query_typed(sql, params).map_err(fail)
    }

    /// Column `index` of `row`, or a store error naming it (never a panic).
    fn column<'r, T: FromSql<'r>>(&self, row: &'r Row, index: usize) -> Result<T> {
        row.try_get(index).map_err(self.fail())
    }

    /// A chunk as `SELECT n.id, n.parent, n.position, n.codec, n.body,
    /// c.value` reads it.
    fn stored_chunk(&self, row: &Row) -> Result<StoredChunk> {
        let codec = self.column::<i32>(row, 3)?;
        Ok(StoredChunk {
            node: self.column(row, 0)?,
            parent: self.column(row, 1)?,
            position: self.position(row, 2)?,
            codec: u32::try_from(codec).unwrap_or(u32::MAX),
            json: self.column(row, 4)?,
            counts: self.column(row, 5)?,
        })
    }

    /// A name or id column (`BYTEA`), which this store only writes as UTF-8.
    fn text(&self, row: &Row, index: usize) -> Result<String> {
        String::from_utf8(self.column::<Vec<u8>>(row, index)?).map_err(|_| {
            store_error(
                self.location,
                format!("column {index} holds a name that is not UTF-8"),
            )
        })
    }

    fn count(&self, row: &Row, index: usize) -> Result<u64> {
        Ok(u64::try_from(self.column::<i64>(row, index)?).unwrap_or(0))
    }

    fn position(&self, row: &Row, index: usize) -> Result<usize> {
        Ok(usize::try_from(self.column::<i64>(row, index)?).unwrap_or(0))
    }

    fn token_tally_at(&self, row: &Row, index: usize) -> Result<Option<TokenTally>> {
        let text: Option<String> = self.column(row, index)?;
        Ok(text.as_deref().and_then(TokenTally::decode))
    }

    /// A node's tallies, from four columns starting at `first`.
    fn tallies_at(&self, row: &Row, first: usize) -> Result<NodeTallies> {
        let classes: Option<String> = self.column(row, first + 3)?;
        Ok(NodeTallies {
            last_user: self.column(row, first)?,
            last_call: self.column(row, first + 1)?,
            last_protected: self.column(row, first + 2)?,
            classes: classes.as_deref().and_then(ClassTally::decode),
        })
    }

    fn chat_row_of(&self, row: &Row) -> Result<ChatRow> {
        Ok(ChatRow {
            id: self.text(row, 0)?,
            metadata: self.column(row, 1)?,
            active_branch: self.text(row, 2)?,
            created_at_ms: self.column(row, 3)?,
            updated_at_ms: self.column(row, 4)?,
        })
    }
}

impl Tx for PgTx<'_> {
    fn insert_chat(&mut self, chat: &str, branch: &str, now: i64) -> Result<bool> {
        let created = self.run(
            "INSERT INTO chats (id, metadata, active_branch, created_at, updated_at) \
             VALUES ($1, '{}', $2, $3, $3) ON CONFLICT (id) DO NOTHING",
            &[
                (&chat.as_bytes(), Type::BYTEA),
                (&branch.as_bytes(), Type::BYTEA),
                (&now, Type::INT8),
            ],
        )?;
        Ok(created > 0)
    }

    fn chat_row(&mut self, chat: &str) -> Result<Option<ChatRow>> {
        let sql = format!("{CHAT} WHERE id = $1");
        let row = self.one(&sql, &[(&chat.as_bytes(), Type::BYTEA)])?;
        row.map(|row| self.chat_row_of(&row)).transpose()
    }

    fn chat_rows(&mut self) -> Result<Vec<ChatRow>> {
        let rows = self.all(&format!("{CHAT} ORDER BY id"), &[])?;
        rows.iter().map(|row| self.chat_row_of(row)).collect()
    }

    fn lock_chat(&mut self, chat: &str) -> Result<Option<u64>> {
        let row = self.one(
            "SELECT system_version FROM chats WHERE id = $1 FOR UPDATE",
            &[(&chat.as_bytes(), Type::BYTEA)],
        )?;
        row.map(|row| self.count(&row, 0)).transpose()
    }

    fn system_lane(&mut self, chat: &str) -> Result<Option<(Option<String>, u64)>> {
        let row = self.one(
            "SELECT system, system_version FROM chats WHERE id = $1",
            &[(&chat.as_bytes(), Type::BYTEA)],
        )?;
        row.map(|row| Ok((self.column(&row, 0)?, self.count(&row, 1)?)))
            .transpose()
    }

    fn set_metadata(&mut self, chat: &str, metadata: &str, now: i64) -> Result<()> {
        self.run(
            "UPDATE chats SET metadata = $2, updated_at = $3 WHERE id = $1",
            &[
                (&chat.as_bytes(), Type::BYTEA),
                (&metadata, Type::TEXT),
                (&now, Type::INT8),
            ],
        )?;
        Ok(())
    }

    fn touch(&mut self, chat: &str, system: Option<&str>, now: i64) -> Result<()> {
        match system {
            Some(system) => self.run(
                "UPDATE chats SET system = $2, system_version = system_version + 1, \
                 updated_at = $3 WHERE id = $1",
                &[
                    (&chat.as_bytes(), Type::BYTEA),
                    (&system, Type::TEXT),
                    (&now, Type::INT8),
                ],
            ),
            None => self.run(
                "UPDATE chats SET updated_at = $2 WHERE id = $1",
                &[(&chat.as_bytes(), Type::BYTEA), (&now, Type::INT8)],
            ),
        }?;
        Ok(())
    }

    fn set_active(&mut self, chat: &str, branch: &str, now: i64) -> Result<()> {
        self.run(
            "UPDATE chats SET active_branch = $2, updated_at = $3 WHERE id = $1",
            &[
                (&chat.as_bytes(), Type::BYTEA),
                (&branch.as_bytes(), Type::BYTEA),
                (&now, Type::INT8),
            ],
        )?;
        Ok(())
    }

    fn branch_head(&mut self, chat: &str, branch: &str) -> Result<Option<Option<NodeId>>> {
        let row = self.one(
            "SELECT head FROM branches WHERE chat = $1 AND name = $2",
            &[
                (&chat.as_bytes(), Type::BYTEA),
                (&branch.as_bytes(), Type::BYTEA),
            ],
        )?;
        row.map(|row| self.column(&row, 0)).transpose()
    }

    fn insert_branch(&mut self, chat: &str, name: &str, head: Option<NodeId>) -> Result<()> {
        self.run(
            "INSERT INTO branches (chat, name, head) VALUES ($1, $2, $3)",
            &[
                (&chat.as_bytes(), Type::BYTEA),
                (&name.as_bytes(), Type::BYTEA),
                (&head, Type::INT8),
            ],
        )?;
        Ok(())
    }

    fn set_head(&mut self, chat: &str, branch: &str, head: Option<NodeId>) -> Result<()> {
        self.run(
            "UPDATE branches SET head = $3 WHERE chat = $1 AND name = $2",
            &[
                (&chat.as_bytes(), Type::BYTEA),
                (&branch.as_bytes(), Type::BYTEA),
                (&head, Type::INT8),
            ],
        )?;
        Ok(())
    }

    fn branch_rows(&mut self, chat: &str) -> Result<Vec<(String, Option<NodeId>, usize)>> {
        let rows = self.all(
            "SELECT b.name, b.head, COALESCE(n.position + 1, 0) FROM branches b \
             LEFT JOIN nodes n ON n.id = b.head AND n.chat = b.chat \
             WHERE b.chat = $1 ORDER BY b.name",
            &[(&chat.as_bytes(), Type::BYTEA)],
        )?;
        rows.iter()
            .map(|row| {
                let head = self.column(row, 1)?;
                Ok((self.text(row, 0)?, head, self.position(row, 2)?))
            })
            .collect()
    }

    fn set_checkpoint(&mut self, chat: &str, name: &str, node: Option<NodeId>) -> Result<()> {
        self.run(
            "INSERT INTO checkpoints (chat, name, node) VALUES ($1, $2, $3) \
             ON CONFLICT (chat, name) DO UPDATE SET node = excluded.node",
            &[
                (&chat.as_bytes(), Type::BYTEA),
                (&name.as_bytes(), Type::BYTEA),
                (&node, Type::INT8),
            ],
        )?;
        Ok(())
    }

    fn checkpoints(&mut self, chat: &str) -> Result<Vec<CheckpointSummary>> {
        let rows = self.all(
            "SELECT name, node FROM checkpoints WHERE chat = $1 ORDER BY name",
            &[(&chat.as_bytes(), Type::BYTEA)],
        )?;
        rows.iter()
            .map(|row| {
                let name = self.text(row, 0)?;
                let node = self.column(row, 1)?;
                Ok(CheckpointSummary { name, node })
            })
            .collect()
    }

    fn last_build(&mut self, chat: &str, branch: &str) -> Result<Option<String>> {
        let row = self.one(
            "SELECT record FROM builds WHERE chat = $1 AND branch = $2",
            &[
                (&chat.as_bytes(), Type::BYTEA),
                (&branch.as_bytes(), Type::BYTEA),
            ],
        )?;
        row.map(|row| self.column(&row, 0)).transpose()
    }

    fn put_last_build(
        &mut self,
        chat: &str,
        branch: &str,
        chunks: i64,
        record: &str,
    ) -> Result<()> {
        self.run(
            "INSERT INTO builds (chat, branch, chunks, record) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (chat, branch) DO UPDATE \
             SET chunks = excluded.chunks, record = excluded.record \
             WHERE builds.chunks <= excluded.chunks",
            &[
                (&chat.as_bytes(), Type::BYTEA),
                (&branch.as_bytes(), Type::BYTEA),
                (&chunks, Type::INT8),
                (&record, Type::TEXT),
            ],
        )?;
        Ok(())
    }

    fn insert_usage(&mut self, chat: &str, usage: &Usage, now: i64) -> Result<()> {
        let as_i64 = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        self.run(
            "INSERT INTO usage (chat, at, model, input_tokens, output_tokens, base_tokens) \
             VALUES ($1, $2, $3, $4, $5, $6)",
            &[
                (&chat.as_bytes(), Type::BYTEA),
                (&now, Type::INT8),
                (&usage.model.as_bytes(), Type::BYTEA),
                (&as_i64(usage.input_tokens), Type::INT8),
                (&as_i64(usage.output_tokens), Type::INT8),
                (&usage.base_tokens.map(as_i64), Type::INT8),
            ],
        )?;
        Ok(())
    }

    fn usage(&mut self, chat: &str) -> Result<Vec<Usage>> {
        let rows = self.all(
            "SELECT model, input_tokens, output_tokens, base_tokens FROM usage \
             WHERE chat = $1 ORDER BY id",
            &[(&chat.as_bytes(), Type::BYTEA)],
        )?;
        let as_u64 = |n: i64| u64::try_from(n).unwrap_or(0);
        rows.iter()
            .map(|row| {
                let base_tokens: Option<i64> = self.column(row, 3)?;
                Ok(Usage {
                    model: self.text(row, 0)?,
                    input_tokens: self.count(row, 1)?,
                    output_tokens: self.count(row, 2)?,
                    base_tokens: base_tokens.map(as_u64),
                })
            })
            .collect()
    }

    fn position_of(&mut self, chat: &str, node: NodeId) -> Result<Option<i64>> {
        let row = self.one(
            "SELECT position FROM nodes WHERE id = $1 AND chat = $2",
            &[(&node, Type::INT8), (&chat.as_bytes(), Type::BYTEA)],
        )?;
        row.map(|row| self.column(&row, 0)).transpose()
    }

    fn read_back(&mut self, chat: &str, walk: ReadBack<'_>) -> Result<Vec<StoredChunk>> {
        let rows = self.all(
            "WITH RECURSIVE back (id, n) AS ( \
               SELECT $2::bigint, 1::bigint WHERE $3::bigint > 0 \
               UNION ALL \
               SELECT n.parent, back.n + 1 FROM nodes n JOIN back ON n.id = back.id \
               WHERE n.chat = $1 AND n.parent IS NOT NULL AND back.n < $3::bigint) \
             SELECT n.id, n.parent, n.position, n.codec, n.body, c.value FROM back \
             JOIN nodes n ON n.id = back.id AND n.chat = $1 \
             LEFT JOIN counts c ON c.node = n.id AND c.key = $4 \
             ORDER BY back.n",
            &[
                (&chat.as_bytes(), Type::BYTEA),
                (&walk.from, Type::INT8),
                (&walk.limit, Type::INT8),
                (&walk.count_key, Type::TEXT),
            ],
        )?;
        rows.iter().map(|row| self.stored_chunk(row)).collect()
    }

    fn read_nodes(
        &mut self,
        chat: &str,
        nodes: &[NodeId],
        count_key: Option<&str>,
    ) -> Result<Vec<StoredChunk>> {
        let rows = self.all(
            "SELECT n.id, n.parent, n.position, n.codec, n.body, c.value FROM nodes n \
             LEFT JOIN counts c ON c.node = n.id AND c.key = $3 \
             WHERE n.chat = $1 AND n.id = ANY($2)",
            &[
                (&chat.as_bytes(), Type::BYTEA),
                (&nodes, Type::INT8_ARRAY),
                (&count_key, Type::TEXT),
            ],
        )?;
        rows.iter().map(|row| self.stored_chunk(row)).collect()
    }

    fn ancestor(&mut self, chat: &str, node: NodeId, position: i64) -> Result<Option<NodeId>> {
        let row = self.one(
            "WITH RECURSIVE climb (id, position, parent, jump) AS ( \
               SELECT id, position, parent, jump FROM nodes WHERE id = $2 AND chat = $1 \
               UNION ALL \
               SELECT n.id, n.position, n.parent, n.jump FROM climb c \
               JOIN nodes j ON j.id = c.jump \
               JOIN nodes n ON n.id = CASE WHEN j.position >= $3 THEN c.jump ELSE c.parent END \
               WHERE c.position > $3) \
             SELECT id FROM climb WHERE position = $3",
            &[
                (&chat.as_bytes(), Type::BYTEA),
                (&node, Type::INT8),
                (&position, Type::INT8),
            ],
        )?;
        row.map(|row| self.column(&row, 0)).transpose()
    }

    fn nodes_with(&mut self, chat: &str, key: NodeKey<'_>, up_to: i64) -> Result<Vec<Found>> {
        let (sql, value) = match key {
            NodeKey::ChunkId(id) => (
                "SELECT id, position, last_call IS NOT DISTINCT FROM id FROM nodes \
                 WHERE chat = $1 AND chunk_id = $2 AND position <= $3 \
                 ORDER BY position DESC, id DESC",
                id,
            ),
            NodeKey::CallId(id) => (
                "SELECT id, position, last_call IS NOT DISTINCT FROM id FROM nodes \
                 WHERE chat = $1 AND call_id = $2 AND position <= $3 \
                 ORDER BY position DESC, id DESC",
                id,
            ),
        };
        let rows = self.all(
            sql,
            &[
                (&chat.as_bytes(), Type::BYTEA),
                (&value.as_bytes(), Type::BYTEA),
                (&up_to, Type::INT8),
            ],
        )?;
        rows.iter()
            .map(|row| {
                Ok(Found {
                    node: self.column(row, 0)?,
                    position: self.position(row, 1)?,
                    call: self.column(row, 2)?,
                })
            })
            .collect()
    }

    fn path_row(&mut self, chat: &str, node: NodeId, count_key: &str) -> Result<Option<PathRow>> {
        let row = self.one(
            "SELECT n.position, n.last_user, n.last_call, n.last_protected, n.classes, \
             c.tally FROM nodes n LEFT JOIN counts c ON c.node = n.id AND c.key = $3 \
             WHERE n.id = $2 AND n.chat = $1",
            &[
                (&chat.as_bytes(), Type::BYTEA),
                (&node, Type::INT8),
                (&count_key, Type::TEXT),
            ],
        )?;
        row.map(|row| {
            Ok(PathRow {
                position: self.column(&row, 0)?,
                tallies: self.tallies_at(&row, 1)?,
                tokens: self.token_tally_at(&row, 5)?,
            })
        })
        .transpose()
    }

    fn tallies(&mut self, node: NodeId) -> Result<Option<NodeTallies>> {
        let row = self.one(
            "SELECT last_user, last_call, last_protected, classes FROM nodes WHERE id = $1",
            &[(&node, Type::INT8)],
        )?;
        row.map(|row| self.tallies_at(&row, 0)).transpose()
    }

    fn token_tally(&mut self, node: NodeId, key: &str) -> Result<Option<TokenTally>> {
        let row = self.one(
            "SELECT tally FROM counts WHERE node = $1 AND key = $2",
            &[(&node, Type::INT8), (&key, Type::TEXT)],
        )?;
        Ok(row
            .map(|row| self.token_tally_at(&row, 0))
            .transpose()?
            .flatten())
    }

    fn jump_chain(&mut self, chat: &str, node: NodeId) -> Result<Vec<Link>> {
        let rows = self.all(
            "WITH RECURSIVE chain (id, position, jump, n) AS ( \
               SELECT id, position, jump, 0 FROM nodes WHERE id = $2 AND chat = $1 \
               UNION ALL \
               SELECT n.id, n.position, n.jump, c.n + 1 FROM nodes n JOIN chain c ON n.id = c.jump) \
             SELECT id, position, jump FROM chain ORDER BY n",
            &[(&chat.as_bytes(), Type::BYTEA), (&node, Type::INT8)],
        )?;
        rows.iter()
            .map(|row| {
                let (id, position) = (self.column(row, 0)?, self.column(row, 1)?);
                let jump = self.column(row, 2)?;
                Ok(Link { id, position, jump })
            })
            .collect()
    }

    fn new_node_ids(&mut self, count: usize) -> Result<Vec<NodeId>> {
        let count = i64::try_from(count).unwrap_or(i64::MAX);
        let rows = self.all(
            "SELECT nextval(pg_get_serial_sequence('nodes', 'id')) \
             FROM generate_series(1, $1::bigint)",
            &[(&count, Type::INT8)],
        )?;
        let mut ids = rows
            .iter()
            .map(|row| self.column(row, 0))
            .collect::<Result<Vec<NodeId>>>()?;
        ids.sort_unstable();
        Ok(ids)
    }

    fn insert_nodes(&mut self, chat: &str, nodes: &[NodeRow<'_>]) -> Result<()> {
        super::insert::nodes(self, chat, nodes)
    }

    fn insert_counts(&mut self, counts: &[CountRow<'_>]) -> Result<()> {
        super::insert::counts(self, counts)
    }

    fn count_bases(&mut self, chat: &str, key: &str, nodes: &[NodeId]) -> Result<Vec<CountBase>> {
        // Each node's parent with its token tally, and the node's own
        // tally when it has counts already, in one query.
        let rows = self.all(
            "SELECT n.id, n.parent, p.tally, o.node IS NOT NULL, o.tally FROM nodes n \
             LEFT JOIN counts p ON p.node = n.parent AND p.key = $3 \
             LEFT JOIN counts o ON o.node = n.id AND o.key = $3 \
             WHERE n.chat = $1 AND n.id = ANY($2)",
            &[
                (&chat.as_bytes(), Type::BYTEA),
                (&nodes, Type::INT8_ARRAY),
                (&key, Type::TEXT),
            ],
        )?;
        rows.iter()
            .map(|row| {
                let own = self.column::<bool>(row, 3)?;
                Ok(CountBase {
                    node: self.column(row, 0)?,
                    parent: self.column(row, 1)?,
                    parent_tally: self.token_tally_at(row, 2)?,
                    own: own.then(|| self.token_tally_at(row, 4)).transpose()?,
                })
            })
            .collect()
    }

    fn reached(&mut self, chat: &str, node: NodeId) -> Result<bool> {
        let sql = format!(
            "{BELOW} SELECT EXISTS (SELECT 1 FROM branches WHERE chat = $1 AND head IN \
             (SELECT id FROM below)) OR EXISTS (SELECT 1 FROM checkpoints WHERE chat = $1 \
             AND node IN (SELECT id FROM below))"
        );
        let row = self.one(
            &sql,
            &[(&chat.as_bytes(), Type::BYTEA), (&node, Type::INT8)],
        )?;
        Ok(row
            .map(|row| self.column(&row, 0))
            .transpose()?
            .unwrap_or(false))
    }

    fn delete_below(&mut self, chat: &str, node: NodeId) -> Result<()> {
        self.run(
            &format!("{BELOW} DELETE FROM nodes WHERE chat = $1 AND id IN (SELECT id FROM below)"),
            &[(&chat.as_bytes(), Type::BYTEA), (&node, Type::INT8)],
        )?;
        Ok(())
    }
}

/// `below`: node `$2` and every node under it.
const BELOW: &str = "WITH RECURSIVE below (id) AS ( \
       SELECT $2::bigint \
       UNION ALL \
       SELECT n.id FROM nodes n JOIN below b ON n.parent = b.id WHERE n.chat = $1)";

/// The codec column's value.
pub(super) fn codec() -> i32 {
    i32::try_from(CHUNK_CODEC).unwrap_or(i32::MAX)
}
