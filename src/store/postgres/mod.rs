//! [`PostgresStore`]: durable chats on a PostgreSQL server, shared by every
//! process that points at it.

mod location;
mod schema;

use postgres::types::Type;
use postgres::{IsolationLevel, NoTls, Row, Transaction};
use r2d2_postgres::PostgresConnectionManager;
use r2d2_postgres::r2d2::{Pool, PooledConnection};
use serde_json::Value;

use super::errors::{
    branch_exists, check_chat_id, check_expected, check_name, no_branch, no_chat, no_node,
    store_error, unreadable_metadata,
};
use super::lineage::{Chain, Link};
use super::tally::{ClassTally, NodeTallies, PathSummary, TokenTally, chain_tallies, token_tally};
use super::{
    BranchHead, BranchSummary, CHUNK_CODEC, ChatSummary, CheckpointSummary, MAIN_BRANCH, NewChunk,
    NodeId, NodeKey, Save, Saved, Store, StoredChunk, Usage, now_ms,
};
use crate::error::{ErrorKind, Result};
use location::Location;
pub use location::{DEFAULT_POOL_SIZE, DEFAULT_SCHEMA};

/// Durable chats on a PostgreSQL server.
///
/// `open("postgres://user[:password]@host[:port]/database")` connects
/// (without TLS: see below), creates the store's tables in their own
/// schema if missing (`agent_context`, or `?schema=name`) and migrates a
/// store written by an earlier version. It keeps a pool of connections
/// (at most 8, or `?pool_size=n`) for the threads that share it. The
/// driver's own URL parameters (`connect_timeout`, `application_name`,
/// …) are passed on.
///
/// * **One transaction per save.** A save's chunks, counts, head and
///   system lane commit together or not at all; a client killed mid-save
///   leaves nothing of it (the server rolls its transaction back).
/// * **Writers serialize.** Every write locks its chat's row first
///   (`SELECT … FOR UPDATE`), so saves to a chat from any number of
///   processes and machines take turns; a stale one is refused with
///   [`ErrorKind::Conflict`] or
///   [`ErrorKind::SystemConflict`], and
///   none is lost. Reads see one snapshot (repeatable read).
/// * **TLS is off**: connections are plain TCP or a Unix socket, so use
///   it on loopback, a private network or through a tunnel; a URL asking
///   for `sslmode=require` fails to connect.
#[derive(Debug)]
pub struct PostgresStore {
    pool: Pool<PostgresConnectionManager<NoTls>>,
    location: String,
    schema: String,
}

impl PostgresStore {
    /// Connects to the store at `url`, creating or migrating its tables.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Option`] for a URL it cannot
    /// read; [`ErrorKind::Store`] if the server
    /// cannot be reached or refuses, the schema holds tables that are no
    /// store, or the store was written by a later version of this crate.
    pub fn open(url: &str) -> Result<Self> {
        PostgresStore::connect(url, true)
    }

    /// Connects to the store at `url` without creating it.
    ///
    /// # Errors
    ///
    /// As [`open`](PostgresStore::open), and [`ErrorKind::Store`]
    /// if there is no store in the schema.
    pub fn open_existing(url: &str) -> Result<Self> {
        PostgresStore::connect(url, false)
    }

    /// The schema the store's tables are in.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    fn connect(url: &str, create: bool) -> Result<Self> {
        let Location {
            config,
            schema,
            pool_size,
            display,
        } = Location::parse(url)?;
        let mut client = config.connect(NoTls).map_err(db_error(&display))?;
        schema::migrate(&mut client, &schema, &display, create)?;
        // The pool keeps the connection it was given no use: it opens its
        // own, lazily, and checks each before lending it.
        drop(client);
        let pool = Pool::builder()
            .max_size(pool_size)
            .min_idle(Some(0))
            .build_unchecked(PostgresConnectionManager::new(config, NoTls));
        Ok(PostgresStore {
            pool,
            location: display,
            schema,
        })
    }

    fn client(&self) -> Result<PooledConnection<PostgresConnectionManager<NoTls>>> {
        self.pool.get().map_err(|e| {
            store_error(
                &self.location,
                format!("no connection to the server: {e}; check that it is up and reachable"),
            )
        })
    }

    /// Runs `work` in one transaction, committed if it succeeds. A write
    /// that names a chat locks its row first (see [`lock_chat`]).
    fn write<T>(&self, work: impl FnOnce(&mut Transaction<'_>) -> Result<T>) -> Result<T> {
        let mut client = self.client()?;
        let mut tx = client.transaction().map_err(self.fail())?;
        let value = work(&mut tx)?;
        tx.commit().map_err(self.fail())?;
        Ok(value)
    }

    /// Runs `work` on one consistent snapshot.
    fn read<T>(&self, work: impl FnOnce(&mut Transaction<'_>) -> Result<T>) -> Result<T> {
        let mut client = self.client()?;
        let mut tx = client
            .build_transaction()
            .isolation_level(IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .map_err(self.fail())?;
        work(&mut tx)
    }

    fn fail(&self) -> impl Fn(postgres::Error) -> crate::Error + '_ {
        db_error(&self.location)
    }
}

impl Store for PostgresStore {
    fn location(&self) -> String {
        self.location.clone()
    }

    fn open_chat(&self, chat: &str) -> Result<ChatSummary> {
        check_chat_id(chat)?;
        self.write(|tx| {
            let now = now_ms();
            let created = tx
                .execute_typed(
                    "INSERT INTO chats (id, metadata, active_branch, created_at, updated_at) \
                     VALUES ($1, '{}', $2, $3, $3) ON CONFLICT (id) DO NOTHING",
                    &[
                        (&chat.as_bytes(), Type::BYTEA),
                        (&MAIN_BRANCH.as_bytes(), Type::BYTEA),
                        (&now, Type::INT8),
                    ],
                )
                .map_err(self.fail())?;
            if created > 0 {
                tx.execute_typed(
                    "INSERT INTO branches (chat, name, head) VALUES ($1, $2, NULL)",
                    &[
                        (&chat.as_bytes(), Type::BYTEA),
                        (&MAIN_BRANCH.as_bytes(), Type::BYTEA),
                    ],
                )
                .map_err(self.fail())?;
            }
            self.summary(tx, chat)?.ok_or_else(|| no_chat(chat))
        })
    }

    fn chat(&self, chat: &str) -> Result<Option<ChatSummary>> {
        self.read(|tx| self.summary(tx, chat))
    }

    fn chats(&self) -> Result<Vec<ChatSummary>> {
        self.read(|tx| {
            tx.query_typed(&format!("{SUMMARY} ORDER BY id"), &[])
                .map_err(self.fail())?
                .iter()
                .map(|row| self.summary_of(row))
                .collect()
        })
    }

    fn set_metadata(&self, chat: &str, metadata: &Value) -> Result<()> {
        self.write(|tx| {
            self.lock_chat(tx, chat)?;
            tx.execute_typed(
                "UPDATE chats SET metadata = $2, updated_at = $3 WHERE id = $1",
                &[
                    (&chat.as_bytes(), Type::BYTEA),
                    (&metadata.to_string(), Type::TEXT),
                    (&now_ms(), Type::INT8),
                ],
            )
            .map_err(self.fail())?;
            Ok(())
        })
    }

    fn head(&self, chat: &str, branch: &str) -> Result<BranchHead> {
        self.read(|tx| {
            let row = tx
                .query_typed_opt(
                    "SELECT system, system_version FROM chats WHERE id = $1",
                    &[(&chat.as_bytes(), Type::BYTEA)],
                )
                .map_err(self.fail())?
                .ok_or_else(|| no_chat(chat))?;
            let system: Option<String> = self.column(&row, 0)?;
            let system_version = self.version_of(&row, 1)?;
            let head = self
                .branch_head(tx, chat, branch)?
                .ok_or_else(|| no_branch(chat, branch))?;
            let chunks = match head {
                Some(head) => self.position_of(tx, chat, head)?.map_or(0, |p| p + 1),
                None => 0,
            };
            Ok(BranchHead {
                branch: branch.to_owned(),
                head,
                chunks: usize::try_from(chunks).unwrap_or(0),
                system,
                system_version,
            })
        })
    }

    fn read_back(
        &self,
        chat: &str,
        from: NodeId,
        limit: usize,
        count_key: Option<&str>,
    ) -> Result<Vec<StoredChunk>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.read(|tx| {
            tx.query_typed(
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
                    (&from, Type::INT8),
                    (&limit, Type::INT8),
                    (&count_key, Type::TEXT),
                ],
            )
            .map_err(self.fail())?
            .iter()
            .map(|row| {
                Ok(StoredChunk {
                    node: self.column(row, 0)?,
                    parent: self.column(row, 1)?,
                    position: usize::try_from(self.column::<i64>(row, 2)?).unwrap_or(0),
                    codec: u32::try_from(self.column::<i32>(row, 3)?).unwrap_or(u32::MAX),
                    json: self.column(row, 4)?,
                    counts: self.column(row, 5)?,
                })
            })
            .collect()
        })
    }

    fn ancestor(&self, chat: &str, node: NodeId, position: usize) -> Result<Option<NodeId>> {
        let position = i64::try_from(position).unwrap_or(i64::MAX);
        self.read(|tx| {
            tx.query_typed_opt(
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
            )
            .map_err(self.fail())?
            .map(|row| self.column(&row, 0))
            .transpose()
        })
    }

    fn nodes_with(
        &self,
        chat: &str,
        key: NodeKey<'_>,
        max_position: usize,
    ) -> Result<Vec<(NodeId, usize, bool)>> {
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
        let max_position = i64::try_from(max_position).unwrap_or(i64::MAX);
        self.read(|tx| {
            tx.query_typed(
                sql,
                &[
                    (&chat.as_bytes(), Type::BYTEA),
                    (&value.as_bytes(), Type::BYTEA),
                    (&max_position, Type::INT8),
                ],
            )
            .map_err(self.fail())?
            .iter()
            .map(|row| {
                let node = self.column(row, 0)?;
                let position = usize::try_from(self.column::<i64>(row, 1)?).unwrap_or(0);
                Ok((node, position, self.column::<bool>(row, 2)?))
            })
            .collect()
        })
    }

    fn save(&self, chat: &str, save: &Save) -> Result<Saved> {
        self.write(|tx| {
            let mut system_version = self.lock_chat(tx, chat)?;
            let actual = self
                .branch_head(tx, chat, &save.branch)?
                .ok_or_else(|| no_branch(chat, &save.branch))?;
            check_expected(chat, save, actual, system_version)?;
            let nodes = self.insert_chunks(tx, chat, save)?;
            let head = nodes.last().copied().or(actual);
            tx.execute_typed(
                "UPDATE branches SET head = $3 WHERE chat = $1 AND name = $2",
                &[
                    (&chat.as_bytes(), Type::BYTEA),
                    (&save.branch.as_bytes(), Type::BYTEA),
                    (&head, Type::INT8),
                ],
            )
            .map_err(self.fail())?;
            if let Some(replaced) = save.replaces {
                self.prune(tx, chat, replaced)?;
            }
            match &save.system {
                Some(system) => {
                    system_version += 1;
                    tx.execute_typed(
                        "UPDATE chats SET system = $2, system_version = system_version + 1, \
                         updated_at = $3 WHERE id = $1",
                        &[
                            (&chat.as_bytes(), Type::BYTEA),
                            (system, Type::TEXT),
                            (&now_ms(), Type::INT8),
                        ],
                    )
                }
                None => tx.execute_typed(
                    "UPDATE chats SET updated_at = $2 WHERE id = $1",
                    &[(&chat.as_bytes(), Type::BYTEA), (&now_ms(), Type::INT8)],
                ),
            }
            .map_err(self.fail())?;
            Ok(Saved {
                head,
                nodes,
                system_version,
            })
        })
    }

    fn put_counts(&self, chat: &str, key: &str, counts: &[(NodeId, String, u64)]) -> Result<()> {
        self.write(|tx| {
            match self.lock_chat(tx, chat) {
                // No chat, no nodes: nothing to keep counts of.
                Err(error) if matches!(error.kind(), ErrorKind::Chat { .. }) => return Ok(()),
                other => other?,
            };
            let nodes: Vec<NodeId> = counts.iter().map(|(node, _, _)| *node).collect();
            // Each node's parent with its token tally, and the node's own
            // tally when it has counts already (those are kept), in one query.
            let rows = tx
                .query_typed(
                    "SELECT n.id, n.parent, p.tally, o.node IS NOT NULL, o.tally FROM nodes n \
                     LEFT JOIN counts p ON p.node = n.parent AND p.key = $3 \
                     LEFT JOIN counts o ON o.node = n.id AND o.key = $3 \
                     WHERE n.chat = $1 AND n.id = ANY($2)",
                    &[
                        (&chat.as_bytes(), Type::BYTEA),
                        (&nodes, Type::INT8_ARRAY),
                        (&key, Type::TEXT),
                    ],
                )
                .map_err(self.fail())?;
            let mut known: rustc_hash::FxHashMap<NodeId, KnownNode> = Default::default();
            for row in &rows {
                let tally = |index| -> Result<Option<TokenTally>> {
                    let text: Option<String> = self.column(row, index)?;
                    Ok(text.as_deref().and_then(TokenTally::decode))
                };
                let node = KnownNode {
                    parent: self.column(row, 1)?,
                    parent_tally: tally(2)?,
                    own: self.column::<bool>(row, 3)?.then(|| tally(4)).transpose()?,
                };
                known.insert(self.column(row, 0)?, node);
            }
            // Tallies chain through the batch: parents come before children.
            let mut made: rustc_hash::FxHashMap<NodeId, Option<TokenTally>> = Default::default();
            let (mut ids, mut values, mut tallies) = (Vec::new(), Vec::new(), Vec::new());
            for (node, value, tokens) in counts {
                let Some(found) = known.get(node) else {
                    continue;
                };
                let above = found
                    .parent
                    .map(|parent| made.get(&parent).copied().unwrap_or(found.parent_tally));
                let tally = token_tally(above, Some(*tokens));
                made.insert(*node, found.own.unwrap_or(tally));
                ids.push(*node);
                values.push(value.as_str());
                tallies.push(tally.map(|t| t.encode()));
            }
            tx.execute_typed(
                "INSERT INTO counts (node, key, value, tally) \
                 SELECT node, $1, value, tally \
                 FROM UNNEST($2::bigint[], $3::text[], $4::text[]) AS c (node, value, tally) \
                 ON CONFLICT (node, key) DO NOTHING",
                &[
                    (&key, Type::TEXT),
                    (&ids, Type::INT8_ARRAY),
                    (&values, Type::TEXT_ARRAY),
                    (&tallies, Type::TEXT_ARRAY),
                ],
            )
            .map_err(self.fail())?;
            Ok(())
        })
    }

    fn path_summary(
        &self,
        chat: &str,
        node: NodeId,
        count_key: &str,
    ) -> Result<Option<PathSummary>> {
        self.read(|tx| {
            let Some(row) = tx
                .query_typed_opt(
                    "SELECT n.position, n.last_user, n.last_call, n.last_protected, n.classes, \
                     c.tally FROM nodes n LEFT JOIN counts c ON c.node = n.id AND c.key = $3 \
                     WHERE n.id = $2 AND n.chat = $1",
                    &[
                        (&chat.as_bytes(), Type::BYTEA),
                        (&node, Type::INT8),
                        (&count_key, Type::TEXT),
                    ],
                )
                .map_err(self.fail())?
            else {
                return Ok(None);
            };
            let classes: Option<String> = self.column(&row, 4)?;
            let tokens: Option<String> = self.column(&row, 5)?;
            Ok(Some(PathSummary {
                node,
                position: usize::try_from(self.column::<i64>(&row, 0)?).unwrap_or(0),
                last_user: self.column(&row, 1)?,
                last_call: self.column(&row, 2)?,
                last_protected: self.column(&row, 3)?,
                classes: classes.as_deref().and_then(ClassTally::decode),
                tokens: tokens.as_deref().and_then(TokenTally::decode),
            }))
        })
    }

    fn branches(&self, chat: &str) -> Result<Vec<BranchSummary>> {
        self.read(|tx| {
            let active = self
                .summary(tx, chat)?
                .ok_or_else(|| no_chat(chat))?
                .active_branch;
            tx.query_typed(
                "SELECT b.name, b.head, COALESCE(n.position + 1, 0) FROM branches b \
                 LEFT JOIN nodes n ON n.id = b.head AND n.chat = b.chat \
                 WHERE b.chat = $1 ORDER BY b.name",
                &[(&chat.as_bytes(), Type::BYTEA)],
            )
            .map_err(self.fail())?
            .iter()
            .map(|row| {
                let name = self.text(row, 0)?;
                Ok(BranchSummary {
                    active: name == active,
                    name,
                    head: self.column(row, 1)?,
                    chunks: usize::try_from(self.column::<i64>(row, 2)?).unwrap_or(0),
                })
            })
            .collect()
        })
    }

    fn create_branch(
        &self,
        chat: &str,
        name: &str,
        head: Option<NodeId>,
        switch: bool,
    ) -> Result<()> {
        self.write(|tx| {
            self.lock_chat(tx, chat)?;
            check_name(chat, name, "branch")?;
            self.check_node(tx, chat, head)?;
            if self.branch_head(tx, chat, name)?.is_some() {
                return Err(branch_exists(chat, name));
            }
            tx.execute_typed(
                "INSERT INTO branches (chat, name, head) VALUES ($1, $2, $3)",
                &[
                    (&chat.as_bytes(), Type::BYTEA),
                    (&name.as_bytes(), Type::BYTEA),
                    (&head, Type::INT8),
                ],
            )
            .map_err(self.fail())?;
            if switch {
                self.set_active(tx, chat, name)?;
            }
            Ok(())
        })
    }

    fn switch_branch(&self, chat: &str, name: &str) -> Result<()> {
        self.write(|tx| {
            self.lock_chat(tx, chat)?;
            if self.branch_head(tx, chat, name)?.is_none() {
                return Err(no_branch(chat, name));
            }
            self.set_active(tx, chat, name)
        })
    }

    fn set_checkpoint(&self, chat: &str, name: &str, node: Option<NodeId>) -> Result<()> {
        self.write(|tx| {
            self.lock_chat(tx, chat)?;
            check_name(chat, name, "checkpoint")?;
            self.check_node(tx, chat, node)?;
            tx.execute_typed(
                "INSERT INTO checkpoints (chat, name, node) VALUES ($1, $2, $3) \
                 ON CONFLICT (chat, name) DO UPDATE SET node = excluded.node",
                &[
                    (&chat.as_bytes(), Type::BYTEA),
                    (&name.as_bytes(), Type::BYTEA),
                    (&node, Type::INT8),
                ],
            )
            .map_err(self.fail())?;
            Ok(())
        })
    }

    fn checkpoints(&self, chat: &str) -> Result<Vec<CheckpointSummary>> {
        self.read(|tx| {
            self.summary(tx, chat)?.ok_or_else(|| no_chat(chat))?;
            tx.query_typed(
                "SELECT name, node FROM checkpoints WHERE chat = $1 ORDER BY name",
                &[(&chat.as_bytes(), Type::BYTEA)],
            )
            .map_err(self.fail())?
            .iter()
            .map(|row| {
                Ok(CheckpointSummary {
                    name: self.text(row, 0)?,
                    node: self.column(row, 1)?,
                })
            })
            .collect()
        })
    }

    fn record_usage(&self, chat: &str, usage: &Usage) -> Result<()> {
        self.write(|tx| {
            self.lock_chat(tx, chat)?;
            let as_i64 = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
            tx.execute_typed(
                "INSERT INTO usage (chat, at, model, input_tokens, output_tokens, base_tokens) \
                 VALUES ($1, $2, $3, $4, $5, $6)",
                &[
                    (&chat.as_bytes(), Type::BYTEA),
                    (&now_ms(), Type::INT8),
                    (&usage.model.as_bytes(), Type::BYTEA),
                    (&as_i64(usage.input_tokens), Type::INT8),
                    (&as_i64(usage.output_tokens), Type::INT8),
                    (&usage.base_tokens.map(as_i64), Type::INT8),
                ],
            )
            .map_err(self.fail())?;
            Ok(())
        })
    }

    fn usage(&self, chat: &str) -> Result<Vec<Usage>> {
        self.read(|tx| {
            self.summary(tx, chat)?.ok_or_else(|| no_chat(chat))?;
            let as_u64 = |n: i64| u64::try_from(n).unwrap_or(0);
            tx.query_typed(
                "SELECT model, input_tokens, output_tokens, base_tokens FROM usage \
                 WHERE chat = $1 ORDER BY id",
                &[(&chat.as_bytes(), Type::BYTEA)],
            )
            .map_err(self.fail())?
            .iter()
            .map(|row| {
                Ok(Usage {
                    model: self.text(row, 0)?,
                    input_tokens: as_u64(self.column(row, 1)?),
                    output_tokens: as_u64(self.column(row, 2)?),
                    base_tokens: self.column::<Option<i64>>(row, 3)?.map(as_u64),
                })
            })
            .collect()
        })
    }
}

/// What `put_counts` reads of a node before it keeps its counts.
struct KnownNode {
    parent: Option<NodeId>,
    /// The parent's token tally under the key.
    parent_tally: Option<TokenTally>,
    /// The node's own, when it has counts under the key already.
    own: Option<Option<TokenTally>>,
}

/// The columns of a chat's summary, in [`PostgresStore::summary_of`]'s order.
const SUMMARY: &str = "SELECT id, metadata, active_branch, created_at, updated_at FROM chats";

impl PostgresStore {
    /// Locks the chat's row until the transaction ends, so that writes to
    /// the chat take turns; returns its system lane's version.
    fn lock_chat(&self, tx: &mut Transaction<'_>, chat: &str) -> Result<u64> {
        let row = tx
            .query_typed_opt(
                "SELECT system_version FROM chats WHERE id = $1 FOR UPDATE",
                &[(&chat.as_bytes(), Type::BYTEA)],
            )
            .map_err(self.fail())?
            .ok_or_else(|| no_chat(chat))?;
        self.version_of(&row, 0)
    }

    fn summary(&self, tx: &mut Transaction<'_>, chat: &str) -> Result<Option<ChatSummary>> {
        tx.query_typed_opt(
            &format!("{SUMMARY} WHERE id = $1"),
            &[(&chat.as_bytes(), Type::BYTEA)],
        )
        .map_err(self.fail())?
        .map(|row| self.summary_of(&row))
        .transpose()
    }

    fn summary_of(&self, row: &Row) -> Result<ChatSummary> {
        let id = self.text(row, 0)?;
        let metadata: String = self.column(row, 1)?;
        let metadata = serde_json::from_str(&metadata)
            .map_err(|e| unreadable_metadata(&self.location, &id, &e))?;
        Ok(ChatSummary {
            id,
            metadata,
            active_branch: self.text(row, 2)?,
            created_at_ms: self.column(row, 3)?,
            updated_at_ms: self.column(row, 4)?,
        })
    }

    /// The head of `branch`: `None` if there is no such branch, `Some(None)`
    /// if it is empty.
    fn branch_head(
        &self,
        tx: &mut Transaction<'_>,
        chat: &str,
        branch: &str,
    ) -> Result<Option<Option<NodeId>>> {
        tx.query_typed_opt(
            "SELECT head FROM branches WHERE chat = $1 AND name = $2",
            &[
                (&chat.as_bytes(), Type::BYTEA),
                (&branch.as_bytes(), Type::BYTEA),
            ],
        )
        .map_err(self.fail())?
        .map(|row| self.column(&row, 0))
        .transpose()
    }

    fn set_active(&self, tx: &mut Transaction<'_>, chat: &str, branch: &str) -> Result<()> {
        tx.execute_typed(
            "UPDATE chats SET active_branch = $2, updated_at = $3 WHERE id = $1",
            &[
                (&chat.as_bytes(), Type::BYTEA),
                (&branch.as_bytes(), Type::BYTEA),
                (&now_ms(), Type::INT8),
            ],
        )
        .map_err(self.fail())?;
        Ok(())
    }

    /// Inserts the save's chunks as a chain under its parent, in one
    /// statement per table: the ids are drawn first, so each chunk's
    /// parent is known before any is inserted.
    fn insert_chunks(
        &self,
        tx: &mut Transaction<'_>,
        chat: &str,
        save: &Save,
    ) -> Result<Vec<NodeId>> {
        let mut chain = self.chain_under(tx, chat, save.parent)?;
        if save.chunks.is_empty() {
            return Ok(Vec::new());
        }
        let count = i64::try_from(save.chunks.len()).unwrap_or(i64::MAX);
        let mut nodes = tx
            .query_typed(
                "SELECT nextval(pg_get_serial_sequence('nodes', 'id')) \
                 FROM generate_series(1, $1::bigint)",
                &[(&count, Type::INT8)],
            )
            .map_err(self.fail())?
            .iter()
            .map(|row| self.column::<i64>(row, 0))
            .collect::<Result<Vec<NodeId>>>()?;
        nodes.sort_unstable();
        let parents: Vec<Option<NodeId>> = std::iter::once(save.parent)
            .chain(nodes.iter().map(|&node| Some(node)))
            .take(nodes.len())
            .collect();
        let parent_tallies = self.parent_tallies(tx, save)?;
        let tallies = chain_tallies(&nodes, &save.chunks, parent_tallies);
        let last_users: Vec<Option<NodeId>> = tallies.iter().map(|t| t.0.last_user).collect();
        let last_calls: Vec<Option<NodeId>> = tallies.iter().map(|t| t.0.last_call).collect();
        let last_protected: Vec<Option<NodeId>> =
            tallies.iter().map(|t| t.0.last_protected).collect();
        let classes: Vec<Option<String>> = tallies
            .iter()
            .map(|t| t.0.classes.map(|c| c.encode()))
            .collect();
        let call_ids: Vec<Option<&[u8]>> = save
            .chunks
            .iter()
            .map(|c| c.meta.call_id.as_deref().map(str::as_bytes))
            .collect();
        let (positions, jumps): (Vec<i64>, Vec<Option<NodeId>>) = nodes
            .iter()
            .map(|&node| {
                let link = chain.push(node);
                (link.position, link.jump)
            })
            .unzip();
        let chunk_ids: Vec<&[u8]> = save.chunks.iter().map(|c| c.chunk_id.as_bytes()).collect();
        let bodies: Vec<&str> = save.chunks.iter().map(|c| c.json.as_str()).collect();
        let codec = i32::try_from(CHUNK_CODEC).unwrap_or(i32::MAX);
        tx.execute_typed(
            "INSERT INTO nodes (id, chat, parent, position, chunk_id, codec, body, jump, \
               last_user, last_call, last_protected, classes, call_id) \
             SELECT id, $1, parent, position, chunk_id, $2, body, jump, last_user, last_call, \
               last_protected, classes, call_id \
             FROM UNNEST($3::bigint[], $4::bigint[], $5::bigint[], $6::bytea[], $7::text[], \
               $8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[], $12::text[], \
               $13::bytea[]) \
               AS t (id, parent, position, chunk_id, body, jump, last_user, last_call, \
               last_protected, classes, call_id)",
            &[
                (&chat.as_bytes(), Type::BYTEA),
                (&codec, Type::INT4),
                (&nodes, Type::INT8_ARRAY),
                (&parents, Type::INT8_ARRAY),
                (&positions, Type::INT8_ARRAY),
                (&chunk_ids, Type::BYTEA_ARRAY),
                (&bodies, Type::TEXT_ARRAY),
                (&jumps, Type::INT8_ARRAY),
                (&last_users, Type::INT8_ARRAY),
                (&last_calls, Type::INT8_ARRAY),
                (&last_protected, Type::INT8_ARRAY),
                (&classes, Type::TEXT_ARRAY),
                (&call_ids, Type::BYTEA_ARRAY),
            ],
        )
        .map_err(self.fail())?;
        self.insert_counts(tx, &nodes, &save.chunks, &tallies)?;
        Ok(nodes)
    }

    /// The counts of the new nodes that have them, with their paths' token
    /// tallies, in one statement.
    fn insert_counts(
        &self,
        tx: &mut Transaction<'_>,
        nodes: &[NodeId],
        chunks: &[NewChunk],
        tallies: &[(NodeTallies, Option<TokenTally>)],
    ) -> Result<()> {
        let counted = nodes.iter().zip(chunks).zip(tallies);
        let (counted_nodes, records): (Vec<NodeId>, Vec<_>) = counted
            .filter_map(|((node, chunk), (_, tokens))| {
                Some((*node, (chunk.counts.as_ref()?, tokens)))
            })
            .unzip();
        if counted_nodes.is_empty() {
            return Ok(());
        }
        let keys: Vec<&str> = records.iter().map(|r| r.0.key.as_str()).collect();
        let values: Vec<&str> = records.iter().map(|r| r.0.value.as_str()).collect();
        let token_tallies: Vec<Option<String>> =
            records.iter().map(|r| r.1.map(|t| t.encode())).collect();
        tx.execute_typed(
            "INSERT INTO counts (node, key, value, tally) \
             SELECT * FROM UNNEST($1::bigint[], $2::text[], $3::text[], $4::text[])",
            &[
                (&counted_nodes, Type::INT8_ARRAY),
                (&keys, Type::TEXT_ARRAY),
                (&values, Type::TEXT_ARRAY),
                (&token_tallies, Type::TEXT_ARRAY),
            ],
        )
        .map_err(self.fail())?;
        Ok(())
    }

    /// The tallies of the save's parent, and its token tally under the
    /// key of the save's counts; `None` for a save at the root.
    fn parent_tallies(
        &self,
        tx: &mut Transaction<'_>,
        save: &Save,
    ) -> Result<Option<(NodeTallies, Option<TokenTally>)>> {
        let Some(parent) = save.parent else {
            return Ok(None);
        };
        let key = save.chunks.first().and_then(|c| c.counts.as_ref());
        let tokens = match key {
            Some(counts) => self.token_tally(tx, parent, &counts.key)?,
            None => None,
        };
        Ok(Some((self.tallies(tx, parent)?, tokens)))
    }

    /// The tallies node `node` keeps for its path.
    fn tallies(&self, tx: &mut Transaction<'_>, node: NodeId) -> Result<NodeTallies> {
        let Some(row) = tx
            .query_typed_opt(
                "SELECT last_user, last_call, last_protected, classes FROM nodes WHERE id = $1",
                &[(&node, Type::INT8)],
            )
            .map_err(self.fail())?
        else {
            return Ok(NodeTallies::default());
        };
        let classes: Option<String> = self.column(&row, 3)?;
        Ok(NodeTallies {
            last_user: self.column(&row, 0)?,
            last_call: self.column(&row, 1)?,
            last_protected: self.column(&row, 2)?,
            classes: classes.as_deref().and_then(ClassTally::decode),
        })
    }

    /// The token tally of the path to `node` under `key`, if it has one.
    fn token_tally(
        &self,
        tx: &mut Transaction<'_>,
        node: NodeId,
        key: &str,
    ) -> Result<Option<TokenTally>> {
        let row = tx
            .query_typed_opt(
                "SELECT tally FROM counts WHERE node = $1 AND key = $2",
                &[(&node, Type::INT8), (&key, Type::TEXT)],
            )
            .map_err(self.fail())?;
        let tally: Option<String> = match row {
            Some(row) => self.column(&row, 0)?,
            None => None,
        };
        Ok(tally.as_deref().and_then(TokenTally::decode))
    }

    /// The chain new nodes hang in under `parent` (`None`: the root).
    fn chain_under(
        &self,
        tx: &mut Transaction<'_>,
        chat: &str,
        parent: Option<NodeId>,
    ) -> Result<Chain> {
        let Some(parent) = parent else {
            return Ok(Chain::under(None, &[]));
        };
        let jump_chain = self.jump_chain(tx, chat, parent)?;
        let link = *jump_chain.first().ok_or_else(|| no_node(chat, parent))?;
        Ok(Chain::under(Some(link), &jump_chain))
    }

    /// The links of `node` and of every node its jumps reach, `node` first.
    fn jump_chain(&self, tx: &mut Transaction<'_>, chat: &str, node: NodeId) -> Result<Vec<Link>> {
        tx.query_typed(
            "WITH RECURSIVE chain (id, position, jump, n) AS ( \
               SELECT id, position, jump, 0 FROM nodes WHERE id = $2 AND chat = $1 \
               UNION ALL \
               SELECT n.id, n.position, n.jump, c.n + 1 FROM nodes n JOIN chain c ON n.id = c.jump) \
             SELECT id, position, jump FROM chain ORDER BY n",
            &[(&chat.as_bytes(), Type::BYTEA), (&node, Type::INT8)],
        )
        .map_err(self.fail())?
        .iter()
        .map(|row| {
            Ok(Link {
                id: self.column(row, 0)?,
                position: self.column(row, 1)?,
                jump: self.column(row, 2)?,
            })
        })
        .collect()
    }

    /// Deletes `node` and the nodes below it unless a branch or checkpoint
    /// reaches one of them.
    fn prune(&self, tx: &mut Transaction<'_>, chat: &str, node: NodeId) -> Result<()> {
        const BELOW: &str = "WITH RECURSIVE below (id) AS ( \
               SELECT $2::bigint \
               UNION ALL \
               SELECT n.id FROM nodes n JOIN below b ON n.parent = b.id WHERE n.chat = $1)";
        let row = tx
            .query_typed_one(
                &format!(
                    "{BELOW} SELECT EXISTS (SELECT 1 FROM branches WHERE chat = $1 AND head IN \
                     (SELECT id FROM below)) OR EXISTS (SELECT 1 FROM checkpoints WHERE chat = $1 \
                     AND node IN (SELECT id FROM below))"
                ),
                &[(&chat.as_bytes(), Type::BYTEA), (&node, Type::INT8)],
            )
            .map_err(self.fail())?;
        if !self.column::<bool>(&row, 0)? {
            tx.execute_typed(
                &format!(
                    "{BELOW} DELETE FROM nodes WHERE chat = $1 AND id IN (SELECT id FROM below)"
                ),
                &[(&chat.as_bytes(), Type::BYTEA), (&node, Type::INT8)],
            )
            .map_err(self.fail())?;
        }
        Ok(())
    }

    fn position_of(
        &self,
        tx: &mut Transaction<'_>,
        chat: &str,
        node: NodeId,
    ) -> Result<Option<i64>> {
        tx.query_typed_opt(
            "SELECT position FROM nodes WHERE id = $1 AND chat = $2",
            &[(&node, Type::INT8), (&chat.as_bytes(), Type::BYTEA)],
        )
        .map_err(self.fail())?
        .map(|row| self.column(&row, 0))
        .transpose()
    }

    fn check_node(&self, tx: &mut Transaction<'_>, chat: &str, node: Option<NodeId>) -> Result<()> {
        match node {
            Some(node) if self.position_of(tx, chat, node)?.is_none() => Err(no_node(chat, node)),
            _ => Ok(()),
        }
    }

    /// Column `index` of `row`, or a store error naming it (never a panic).
    fn column<'a, T: postgres::types::FromSql<'a>>(&self, row: &'a Row, index: usize) -> Result<T> {
        row.try_get(index).map_err(self.fail())
    }

    /// A name or id column (`BYTEA`), which this store only writes as UTF-8.
    fn text(&self, row: &Row, index: usize) -> Result<String> {
        String::from_utf8(self.column::<Vec<u8>>(row, index)?).map_err(|_| {
            store_error(
                &self.location,
                format!("column {index} holds a name that is not UTF-8"),
            )
        })
    }

    fn version_of(&self, row: &Row, index: usize) -> Result<u64> {
        Ok(u64::try_from(self.column::<i64>(row, index)?).unwrap_or(0))
    }
}

/// A driver error as one line: the server's message, code and detail, or
/// the driver's with its causes.
fn describe(error: &postgres::Error) -> String {
    if let Some(db) = error.as_db_error() {
        let mut message = format!("{} ({})", db.message(), db.code().code());
        if let Some(detail) = db.detail() {
            message.push_str(&format!("; {detail}"));
        }
        if db.code() == &postgres::error::SqlState::LOCK_NOT_AVAILABLE {
            message.push_str(&format!(
                " (another writer held the chat past the {} s wait; retry)",
                location::LOCK_TIMEOUT.as_secs()
            ));
        }
        return message;
    }
    let mut message = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        message.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    message
}

fn db_error(location: &str) -> impl Fn(postgres::Error) -> crate::Error + '_ {
    move |error| store_error(location, describe(&error))
}
