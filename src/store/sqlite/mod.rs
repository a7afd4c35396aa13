//! [`SqliteStore`]: durable chats in one SQLite file (bundled SQLite, no
//! system library needed).

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};
use serde_json::Value;

mod schema;

use super::errors::{
    branch_exists, check_chat_id, check_expected, check_name, check_schema_version, no_branch,
    no_chat, no_node, not_a_store, store_error, unreadable_metadata,
};
use super::lineage::{Chain, Link, jump_for};
use super::tally::{ClassTally, NodeTallies, PathSummary, TokenTally, token_tally};
use super::{
    BranchHead, BranchSummary, CHUNK_CODEC, ChatSummary, CheckpointSummary, MAIN_BRANCH, NodeId,
    NodeKey, Save, Saved, Store, StoredChunk, Usage, now_ms,
};
use crate::error::{ErrorKind, Result};
use schema::{CURRENT_VERSION, JUMPS_SINCE, MIGRATIONS};

/// How long a writer waits for another's transaction before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// Durable chats in a SQLite file.
///
/// * **Crash safety**: write-ahead log, `synchronous=FULL`, one immediate
///   transaction per save: a process killed at any instant leaves each save
///   wholly present or wholly absent.
/// * **Writers**: saves from several processes serialize on the file's
///   write lock (waiting up to 30 s); none is lost, and a stale one is
///   refused with [`ErrorKind::Conflict`].
/// * **Privacy**: a file it creates is readable by its owner only (0600 on
///   Unix), and so are its write-ahead log and shared-memory files.
///
/// ```
/// use agent_context::store::{SqliteStore, Store};
///
/// let store = SqliteStore::in_memory()?;
/// let chat = store.open_chat("support-42")?;
/// assert_eq!(chat.active_branch, "main");
/// # Ok::<(), agent_context::Error>(())
/// ```
#[derive(Debug)]
pub struct SqliteStore {
    connection: Mutex<Connection>,
    location: String,
}

impl SqliteStore {
    /// Opens (creating if missing) the store at `path`, migrating a store
    /// written by an earlier version. An empty path, or one that names a
    /// directory, a device, a FIFO or a socket, is refused before anything
    /// is opened or created (SQLite would write its journal beside it).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotAStore`] if `path` is empty or names something other
    /// than a regular file (a symbolic link to one is followed), or the file
    /// is not a store or was written by a later version of this crate;
    /// [`ErrorKind::Store`] if it cannot be opened or created.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        check_path(path)?;
        let location = path.display().to_string();
        create_private(path).map_err(|e| ErrorKind::Store {
            location: location.clone(),
            message: format!("cannot create the database file: {e}"),
        })?;
        let connection = Connection::open(path).map_err(db_error(&location))?;
        SqliteStore::with_connection(connection, location, true)
    }

    /// A store in memory, gone when dropped: for tests and one-off tools.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Store`] if SQLite fails to start.
    pub fn in_memory() -> Result<Self> {
        let location = ":memory:".to_owned();
        let connection = Connection::open_in_memory().map_err(db_error(&location))?;
        SqliteStore::with_connection(connection, location, false)
    }

    /// The path the store was opened at, if it is a file.
    pub fn path(&self) -> Option<PathBuf> {
        (self.location != ":memory:").then(|| PathBuf::from(&self.location))
    }

    fn with_connection(mut connection: Connection, location: String, file: bool) -> Result<Self> {
        let fail = db_error(&location);
        connection.busy_timeout(BUSY_TIMEOUT).map_err(&fail)?;
        // Refuse another database before changing anything in it.
        {
            let tx = connection.transaction().map_err(&fail)?;
            schema_version(&tx, &location)?;
        }
        if file {
            let mode = wal_mode(&connection).map_err(&fail)?;
            if !mode.eq_ignore_ascii_case("wal") {
                return Err(store_error(
                    &location,
                    format!("the file cannot use a write-ahead log (journal mode {mode})"),
                ));
            }
        }
        connection
            .execute_batch("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;")
            .map_err(&fail)?;
        migrate(&mut connection, &location)?;
        drop(fail);
        Ok(SqliteStore {
            connection: Mutex::new(connection),
            location,
        })
    }

    fn connection(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock cannot leave a transaction open:
        // rusqlite rolls it back on drop.
        self.connection.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `work` in one transaction, committed if it succeeds.
    fn write<T>(&self, work: impl FnOnce(&Transaction<'_>) -> Result<T>) -> Result<T> {
        let mut connection = self.connection();
        let fail = db_error(&self.location);
        let tx = connection
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&fail)?;
        let value = work(&tx)?;
        tx.commit().map_err(&fail)?;
        Ok(value)
    }

    /// Runs `work` on one consistent snapshot.
    fn read<T>(&self, work: impl FnOnce(&Transaction<'_>) -> Result<T>) -> Result<T> {
        let mut connection = self.connection();
        let tx = connection
            .transaction_with_behavior(TransactionBehavior::Deferred)
            .map_err(db_error(&self.location))?;
        work(&tx)
    }

    fn fail(&self) -> impl Fn(rusqlite::Error) -> crate::Error + '_ {
        db_error(&self.location)
    }
}

impl Store for SqliteStore {
    fn location(&self) -> String {
        self.location.clone()
    }

    fn open_chat(&self, chat: &str) -> Result<ChatSummary> {
        check_chat_id(chat)?;
        self.write(|tx| {
            let now = now_ms();
            let created = tx
                .execute(
                    "INSERT INTO chats (id, metadata, active_branch, created_at, updated_at) \
                     VALUES (?1, '{}', ?2, ?3, ?3) ON CONFLICT (id) DO NOTHING",
                    params![chat, MAIN_BRANCH, now],
                )
                .map_err(self.fail())?;
            if created > 0 {
                tx.execute(
                    "INSERT INTO branches (chat, name, head) VALUES (?1, ?2, NULL)",
                    params![chat, MAIN_BRANCH],
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
            let mut statement = tx
                .prepare(
                    "SELECT id, metadata, active_branch, created_at, updated_at \
                     FROM chats ORDER BY id",
                )
                .map_err(self.fail())?;
            let rows = statement
                .query_map([], summary_row)
                .map_err(self.fail())?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(self.fail())?;
            rows.into_iter()
                .map(|row| row.into_summary(&self.location))
                .collect()
        })
    }

    fn set_metadata(&self, chat: &str, metadata: &Value) -> Result<()> {
        self.write(|tx| {
            let changed = tx
                .execute(
                    "UPDATE chats SET metadata = ?2, updated_at = ?3 WHERE id = ?1",
                    params![chat, metadata.to_string(), now_ms()],
                )
                .map_err(self.fail())?;
            if changed == 0 {
                return Err(no_chat(chat));
            }
            Ok(())
        })
    }

    fn head(&self, chat: &str, branch: &str) -> Result<BranchHead> {
        self.read(|tx| {
            let (system, system_version) = self.system_lane(tx, chat)?;
            let head = branch_head(tx, chat, branch)
                .map_err(self.fail())?
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
            let mut statement = tx
                .prepare_cached(
                    "WITH RECURSIVE back (id, n) AS ( \
                       SELECT ?2, 1 WHERE ?3 > 0 \
                       UNION ALL \
                       SELECT n.parent, back.n + 1 FROM nodes n JOIN back ON n.id = back.id \
                       WHERE n.chat = ?1 AND n.parent IS NOT NULL AND back.n < ?3) \
                     SELECT n.id, n.parent, n.position, n.codec, n.body, c.value FROM back \
                     JOIN nodes n ON n.id = back.id AND n.chat = ?1 \
                     LEFT JOIN counts c ON c.node = n.id AND c.key = ?4 \
                     ORDER BY back.n",
                )
                .map_err(self.fail())?;
            let rows = statement
                .query_map(params![chat, from, limit, count_key], |row| {
                    Ok(StoredChunk {
                        node: row.get(0)?,
                        parent: row.get(1)?,
                        position: usize::try_from(row.get::<_, i64>(2)?).unwrap_or(0),
                        codec: row.get(3)?,
                        json: row.get(4)?,
                        counts: row.get(5)?,
                    })
                })
                .map_err(self.fail())?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
                .map_err(self.fail())
        })
    }

    fn ancestor(&self, chat: &str, node: NodeId, position: usize) -> Result<Option<NodeId>> {
        let position = i64::try_from(position).unwrap_or(i64::MAX);
        self.read(|tx| {
            tx.prepare_cached(
                "WITH RECURSIVE climb (id, position, parent, jump) AS ( \
                   SELECT id, position, parent, jump FROM nodes WHERE id = ?2 AND chat = ?1 \
                   UNION ALL \
                   SELECT n.id, n.position, n.parent, n.jump FROM climb c \
                   JOIN nodes j ON j.id = c.jump \
                   JOIN nodes n ON n.id = CASE WHEN j.position >= ?3 THEN c.jump ELSE c.parent END \
                   WHERE c.position > ?3) \
                 SELECT id FROM climb WHERE position = ?3",
            )
            .map_err(self.fail())?
            .query_row(params![chat, node, position], |row| row.get(0))
            .optional()
            .map_err(self.fail())
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
        let max_position = i64::try_from(max_position).unwrap_or(i64::MAX);
        self.read(|tx| {
            let mut statement = tx.prepare_cached(sql).map_err(self.fail())?;
            let rows = statement
                .query_map(params![chat, value, max_position], |row| {
                    let position: i64 = row.get(1)?;
                    let call: Option<bool> = row.get(2)?;
                    let position = usize::try_from(position).unwrap_or(0);
                    Ok((row.get(0)?, position, call.unwrap_or(false)))
                })
                .map_err(self.fail())?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
                .map_err(self.fail())
        })
    }

    fn save(&self, chat: &str, save: &Save) -> Result<Saved> {
        self.write(|tx| {
            let actual = branch_head(tx, chat, &save.branch)
                .map_err(self.fail())?
                .ok_or_else(|| self.missing_branch(tx, chat, &save.branch))?;
            let (_, mut system_version) = self.system_lane(tx, chat)?;
            check_expected(chat, save, actual, system_version)?;
            let nodes = self.insert_chunks(tx, chat, save)?;
            let head = nodes.last().copied().or(actual);
            tx.execute(
                "UPDATE branches SET head = ?3 WHERE chat = ?1 AND name = ?2",
                params![chat, save.branch, head],
            )
            .map_err(self.fail())?;
            if let Some(replaced) = save.replaces {
                self.prune(tx, chat, replaced)?;
            }
            let now = now_ms();
            match &save.system {
                Some(system) => {
                    system_version += 1;
                    tx.execute(
                        "UPDATE chats SET system = ?2, system_version = system_version + 1, \
                         updated_at = ?3 WHERE id = ?1",
                        params![chat, system, now],
                    )
                }
                None => tx.execute(
                    "UPDATE chats SET updated_at = ?2 WHERE id = ?1",
                    params![chat, now],
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
            let mut statement = tx
                .prepare(
                    "INSERT INTO counts (node, key, value, tally) \
                     SELECT id, ?3, ?4, ?5 FROM nodes WHERE id = ?1 AND chat = ?2 \
                     ON CONFLICT (node, key) DO NOTHING",
                )
                .map_err(self.fail())?;
            for (node, value, tokens) in counts {
                let parent: Option<Option<NodeId>> = tx
                    .prepare_cached("SELECT parent FROM nodes WHERE id = ?1 AND chat = ?2")
                    .and_then(|mut s| {
                        s.query_row(params![node, chat], |row| row.get(0))
                            .optional()
                    })
                    .map_err(self.fail())?;
                let Some(parent) = parent else { continue };
                let above = match parent {
                    Some(parent) => Some(self.token_tally(tx, parent, key)?),
                    None => None,
                };
                let tally = token_tally(above, Some(*tokens)).map(|t| t.encode());
                statement
                    .execute(params![node, chat, key, value, tally])
                    .map_err(self.fail())?;
            }
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
            tx.prepare_cached(
                "SELECT n.position, n.last_user, n.last_call, n.last_protected, n.classes, \
                 c.tally FROM nodes n LEFT JOIN counts c ON c.node = n.id AND c.key = ?3 \
                 WHERE n.id = ?2 AND n.chat = ?1",
            )
            .map_err(self.fail())?
            .query_row(params![chat, node, count_key], |row| {
                let classes: Option<String> = row.get(4)?;
                let tokens: Option<String> = row.get(5)?;
                Ok(PathSummary {
                    node,
                    position: usize::try_from(row.get::<_, i64>(0)?).unwrap_or(0),
                    last_user: row.get(1)?,
                    last_call: row.get(2)?,
                    last_protected: row.get(3)?,
                    classes: classes.as_deref().and_then(ClassTally::decode),
                    tokens: tokens.as_deref().and_then(TokenTally::decode),
                })
            })
            .optional()
            .map_err(self.fail())
        })
    }

    fn branches(&self, chat: &str) -> Result<Vec<BranchSummary>> {
        self.read(|tx| {
            let active = self
                .summary(tx, chat)?
                .ok_or_else(|| no_chat(chat))?
                .active_branch;
            let mut statement = tx
                .prepare(
                    "SELECT b.name, b.head, COALESCE(n.position + 1, 0) FROM branches b \
                     LEFT JOIN nodes n ON n.id = b.head AND n.chat = b.chat \
                     WHERE b.chat = ?1 ORDER BY b.name",
                )
                .map_err(self.fail())?;
            let rows = statement
                .query_map([chat], |row| {
                    let name: String = row.get(0)?;
                    Ok(BranchSummary {
                        active: name == active,
                        name,
                        head: row.get(1)?,
                        chunks: row.get::<_, i64>(2)?.try_into().unwrap_or(0),
                    })
                })
                .map_err(self.fail())?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
                .map_err(self.fail())
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
            self.check_name(tx, chat, name, "branch")?;
            self.check_node(tx, chat, head)?;
            if branch_head(tx, chat, name).map_err(self.fail())?.is_some() {
                return Err(branch_exists(chat, name));
            }
            tx.execute(
                "INSERT INTO branches (chat, name, head) VALUES (?1, ?2, ?3)",
                params![chat, name, head],
            )
            .map_err(self.fail())?;
            if switch {
                set_active(tx, chat, name).map_err(self.fail())?;
            }
            Ok(())
        })
    }

    fn switch_branch(&self, chat: &str, name: &str) -> Result<()> {
        self.write(|tx| {
            if branch_head(tx, chat, name).map_err(self.fail())?.is_none() {
                return Err(self.missing_branch(tx, chat, name));
            }
            set_active(tx, chat, name).map_err(self.fail())?;
            Ok(())
        })
    }

    fn set_checkpoint(&self, chat: &str, name: &str, node: Option<NodeId>) -> Result<()> {
        self.write(|tx| {
            self.check_name(tx, chat, name, "checkpoint")?;
            self.check_node(tx, chat, node)?;
            tx.execute(
                "INSERT INTO checkpoints (chat, name, node) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (chat, name) DO UPDATE SET node = excluded.node",
                params![chat, name, node],
            )
            .map_err(self.fail())?;
            Ok(())
        })
    }

    fn checkpoints(&self, chat: &str) -> Result<Vec<CheckpointSummary>> {
        self.read(|tx| {
            self.summary(tx, chat)?.ok_or_else(|| no_chat(chat))?;
            let mut statement = tx
                .prepare("SELECT name, node FROM checkpoints WHERE chat = ?1 ORDER BY name")
                .map_err(self.fail())?;
            let rows = statement
                .query_map([chat], |row| {
                    Ok(CheckpointSummary {
                        name: row.get(0)?,
                        node: row.get(1)?,
                    })
                })
                .map_err(self.fail())?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
                .map_err(self.fail())
        })
    }

    fn record_usage(&self, chat: &str, usage: &Usage) -> Result<()> {
        self.write(|tx| {
            self.summary(tx, chat)?.ok_or_else(|| no_chat(chat))?;
            let as_i64 = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
            tx.execute(
                "INSERT INTO usage (chat, at, model, input_tokens, output_tokens, base_tokens) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    chat,
                    now_ms(),
                    usage.model,
                    as_i64(usage.input_tokens),
                    as_i64(usage.output_tokens),
                    usage.base_tokens.map(as_i64),
                ],
            )
            .map_err(self.fail())?;
            Ok(())
        })
    }

    fn usage(&self, chat: &str) -> Result<Vec<Usage>> {
        self.read(|tx| {
            self.summary(tx, chat)?.ok_or_else(|| no_chat(chat))?;
            let mut statement = tx
                .prepare(
                    "SELECT model, input_tokens, output_tokens, base_tokens FROM usage \
                     WHERE chat = ?1 ORDER BY rowid",
                )
                .map_err(self.fail())?;
            let as_u64 = |n: i64| u64::try_from(n).unwrap_or(0);
            let rows = statement
                .query_map([chat], |row| {
                    Ok(Usage {
                        model: row.get(0)?,
                        input_tokens: as_u64(row.get(1)?),
                        output_tokens: as_u64(row.get(2)?),
                        base_tokens: row.get::<_, Option<i64>>(3)?.map(as_u64),
                    })
                })
                .map_err(self.fail())?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
                .map_err(self.fail())
        })
    }
}

impl SqliteStore {
    fn summary(&self, tx: &Transaction<'_>, chat: &str) -> Result<Option<ChatSummary>> {
        tx.query_row(
            "SELECT id, metadata, active_branch, created_at, updated_at FROM chats WHERE id = ?1",
            [chat],
            summary_row,
        )
        .optional()
        .map_err(self.fail())?
        .map(|row| row.into_summary(&self.location))
        .transpose()
    }

    /// The chat's system lane and its version.
    fn system_lane(&self, tx: &Transaction<'_>, chat: &str) -> Result<(Option<String>, u64)> {
        let (system, version): (Option<String>, i64) = tx
            .query_row(
                "SELECT system, system_version FROM chats WHERE id = ?1",
                [chat],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .optional()
            .map_err(self.fail())?
            .ok_or_else(|| no_chat(chat))?;
        Ok((system, u64::try_from(version).unwrap_or(0)))
    }

    /// Inserts the save's chunks as a chain under its parent.
    fn insert_chunks(&self, tx: &Transaction<'_>, chat: &str, save: &Save) -> Result<Vec<NodeId>> {
        let mut chain = self.chain_under(tx, chat, save.parent)?;
        let mut insert_node = tx
            .prepare_cached(
                "INSERT INTO nodes (chat, parent, position, chunk_id, codec, body, jump, \
                 last_user, last_call, last_protected, classes, call_id) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            )
            .map_err(self.fail())?;
        let mut insert_counts = tx
            .prepare_cached("INSERT INTO counts (node, key, value, tally) VALUES (?1, ?2, ?3, ?4)")
            .map_err(self.fail())?;
        let mut parent = save.parent;
        let (mut above, mut tokens_above) = match self.parent_tallies(tx, save)? {
            Some((tallies, tokens)) => (Some(tallies), Some(tokens)),
            None => (None, None),
        };
        let mut nodes = Vec::with_capacity(save.chunks.len());
        for chunk in &save.chunks {
            let (position, jump) = chain.next();
            // Written with what the node inherits; where it is itself the
            // last user message, tool call or protected chunk, its id is
            // set once known.
            let inherited = NodeTallies::of(0, &chunk.meta, above.as_ref());
            insert_node
                .execute(params![
                    chat,
                    parent,
                    position,
                    chunk.chunk_id,
                    CHUNK_CODEC,
                    chunk.json,
                    jump,
                    inherited.last_user,
                    inherited.last_call,
                    inherited.last_protected,
                    inherited.classes.map(|c| c.encode()),
                    chunk.meta.call_id,
                ])
                .map_err(self.fail())?;
            let node = tx.last_insert_rowid();
            let tallies = NodeTallies::of(node, &chunk.meta, above.as_ref());
            if tallies != inherited {
                tx.prepare_cached(
                    "UPDATE nodes SET last_user = ?2, last_call = ?3, last_protected = ?4 \
                     WHERE id = ?1",
                )
                .and_then(|mut update| {
                    update.execute(params![
                        node,
                        tallies.last_user,
                        tallies.last_call,
                        tallies.last_protected
                    ])
                })
                .map_err(self.fail())?;
            }
            chain.push(node);
            tokens_above = match &chunk.counts {
                Some(counts) => {
                    let tally = token_tally(tokens_above, Some(counts.tokens));
                    insert_counts
                        .execute(params![
                            node,
                            counts.key,
                            counts.value,
                            tally.map(|t| t.encode())
                        ])
                        .map_err(self.fail())?;
                    Some(tally)
                }
                None => Some(None),
            };
            above = Some(tallies);
            nodes.push(node);
            parent = Some(node);
        }
        Ok(nodes)
    }

    /// The tallies of the save's parent, and its token tally under the
    /// key of the save's counts; `None` for a save at the root.
    fn parent_tallies(
        &self,
        tx: &Transaction<'_>,
        save: &Save,
    ) -> Result<Option<(NodeTallies, Option<TokenTally>)>> {
        let Some(parent) = save.parent else {
            return Ok(None);
        };
        let tokens = match save.chunks.first().and_then(|c| c.counts.as_ref()) {
            Some(counts) => self.token_tally(tx, parent, &counts.key)?,
            None => None,
        };
        Ok(Some((self.tallies(tx, parent)?, tokens)))
    }

    /// The tallies node `node` keeps for its path.
    fn tallies(&self, tx: &Transaction<'_>, node: NodeId) -> Result<NodeTallies> {
        tx.prepare_cached(
            "SELECT last_user, last_call, last_protected, classes FROM nodes WHERE id = ?1",
        )
        .map_err(self.fail())?
        .query_row([node], |row| {
            let classes: Option<String> = row.get(3)?;
            Ok(NodeTallies {
                last_user: row.get(0)?,
                last_call: row.get(1)?,
                last_protected: row.get(2)?,
                classes: classes.as_deref().and_then(ClassTally::decode),
            })
        })
        .optional()
        .map_err(self.fail())
        .map(Option::unwrap_or_default)
    }

    /// The token tally of the path to `node` under `key`, if it has one.
    fn token_tally(
        &self,
        tx: &Transaction<'_>,
        node: NodeId,
        key: &str,
    ) -> Result<Option<TokenTally>> {
        let tally: Option<Option<String>> = tx
            .prepare_cached("SELECT tally FROM counts WHERE node = ?1 AND key = ?2")
            .map_err(self.fail())?
            .query_row(params![node, key], |row| row.get(0))
            .optional()
            .map_err(self.fail())?;
        Ok(tally.flatten().as_deref().and_then(TokenTally::decode))
    }

    /// The chain new nodes hang in under `parent` (`None`: the root).
    fn chain_under(
        &self,
        tx: &Transaction<'_>,
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
    fn jump_chain(&self, tx: &Transaction<'_>, chat: &str, node: NodeId) -> Result<Vec<Link>> {
        let mut statement = tx
            .prepare_cached(
                "WITH RECURSIVE chain (id, position, jump, n) AS ( \
                   SELECT id, position, jump, 0 FROM nodes WHERE id = ?2 AND chat = ?1 \
                   UNION ALL \
                   SELECT n.id, n.position, n.jump, c.n + 1 FROM nodes n \
                   JOIN chain c ON n.id = c.jump) \
                 SELECT id, position, jump FROM chain ORDER BY n",
            )
            .map_err(self.fail())?;
        let rows = statement
            .query_map(params![chat, node], |row| {
                Ok(Link {
                    id: row.get(0)?,
                    position: row.get(1)?,
                    jump: row.get(2)?,
                })
            })
            .map_err(self.fail())?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(self.fail())
    }

    /// Deletes `node` and the nodes below it unless a branch or checkpoint
    /// reaches one of them.
    fn prune(&self, tx: &Transaction<'_>, chat: &str, node: NodeId) -> Result<()> {
        const BELOW: &str = "WITH RECURSIVE below (id) AS ( \
               SELECT ?2 \
               UNION ALL \
               SELECT n.id FROM nodes n JOIN below b ON n.parent = b.id WHERE n.chat = ?1)";
        let reached: bool = tx
            .query_row(
                &format!(
                    "{BELOW} SELECT EXISTS (SELECT 1 FROM branches WHERE chat = ?1 AND head IN below) \
                     OR EXISTS (SELECT 1 FROM checkpoints WHERE chat = ?1 AND node IN below)"
                ),
                params![chat, node],
                |row| row.get(0),
            )
            .map_err(self.fail())?;
        if !reached {
            tx.execute(
                &format!("{BELOW} DELETE FROM nodes WHERE chat = ?1 AND id IN below"),
                params![chat, node],
            )
            .map_err(self.fail())?;
        }
        Ok(())
    }

    fn position_of(&self, tx: &Transaction<'_>, chat: &str, node: NodeId) -> Result<Option<i64>> {
        tx.query_row(
            "SELECT position FROM nodes WHERE id = ?1 AND chat = ?2",
            params![node, chat],
            |row| row.get(0),
        )
        .optional()
        .map_err(self.fail())
    }

    fn check_node(&self, tx: &Transaction<'_>, chat: &str, node: Option<NodeId>) -> Result<()> {
        match node {
            Some(node) if self.position_of(tx, chat, node)?.is_none() => Err(no_node(chat, node)),
            _ => Ok(()),
        }
    }

    /// Checks the chat exists and `name` is usable for a branch or checkpoint.
    fn check_name(&self, tx: &Transaction<'_>, chat: &str, name: &str, what: &str) -> Result<()> {
        self.summary(tx, chat)?.ok_or_else(|| no_chat(chat))?;
        check_name(chat, name, what)
    }

    /// The error for a branch that `branch_head` did not find: the chat's
    /// or the branch's.
    fn missing_branch(&self, tx: &Transaction<'_>, chat: &str, branch: &str) -> crate::Error {
        match self.summary(tx, chat) {
            Ok(Some(_)) => no_branch(chat, branch),
            Ok(None) => no_chat(chat),
            Err(error) => error,
        }
    }
}

/// The head of `branch`: `None` if there is no such branch, `Some(None)`
/// if it is empty.
fn branch_head(
    tx: &Transaction<'_>,
    chat: &str,
    branch: &str,
) -> rusqlite::Result<Option<Option<NodeId>>> {
    tx.prepare_cached("SELECT head FROM branches WHERE chat = ?1 AND name = ?2")?
        .query_row(params![chat, branch], |row| row.get(0))
        .optional()
}

fn set_active(tx: &Transaction<'_>, chat: &str, branch: &str) -> rusqlite::Result<usize> {
    tx.execute(
        "UPDATE chats SET active_branch = ?2, updated_at = ?3 WHERE id = ?1",
        params![chat, branch, now_ms()],
    )
}

/// A chats row, before its metadata is parsed.
struct SummaryRow {
    id: String,
    metadata: String,
    active_branch: String,
    created_at_ms: i64,
    updated_at_ms: i64,
}

fn summary_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<SummaryRow> {
    Ok(SummaryRow {
        id: row.get(0)?,
        metadata: row.get(1)?,
        active_branch: row.get(2)?,
        created_at_ms: row.get(3)?,
        updated_at_ms: row.get(4)?,
    })
}

impl SummaryRow {
    fn into_summary(self, location: &str) -> Result<ChatSummary> {
        let metadata = serde_json::from_str(&self.metadata)
            .map_err(|e| unreadable_metadata(location, &self.id, &e))?;
        Ok(ChatSummary {
            id: self.id,
            metadata,
            active_branch: self.active_branch,
            created_at_ms: self.created_at_ms,
            updated_at_ms: self.updated_at_ms,
        })
    }
}

/// Switches the file to write-ahead logging. Setting the journal mode
/// does not wait on a busy file as statements do (two processes creating
/// one store at once meet here), so it is retried for as long as the busy
/// timeout allows.
fn wal_mode(connection: &Connection) -> rusqlite::Result<String> {
    let start = std::time::Instant::now();
    loop {
        match connection.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0)) {
            Err(error)
                if error.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy)
                    && start.elapsed() < BUSY_TIMEOUT =>
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            other => return other,
        }
    }
}

/// Brings the schema to [`CURRENT_VERSION`], in one transaction. A store
/// already there is only read, so readers do not queue behind writers.
fn migrate(connection: &mut Connection, location: &str) -> Result<()> {
    let fail = db_error(location);
    let current = {
        let tx = connection.transaction().map_err(&fail)?;
        schema_version(&tx, location)?
    };
    if current == CURRENT_VERSION {
        return Ok(());
    }
    let tx = connection
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(&fail)?;
    let version = schema_version(&tx, location)?;
    for (from, migration) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        tx.execute_batch(migration).map_err(|e| {
            store_error(
                location,
                format!("migrating the schema from version {from}: {e}"),
            )
        })?;
    }
    if version < JUMPS_SINCE {
        backfill_jumps(&tx).map_err(|e| {
            store_error(
                location,
                format!("migrating the schema: linking nodes: {e}"),
            )
        })?;
    }
    tx.commit().map_err(&fail)
}

/// Gives every node its jump, parents before children: once, when a store
/// written before nodes had jumps is migrated.
fn backfill_jumps(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    let mut links: rustc_hash::FxHashMap<NodeId, Link> = rustc_hash::FxHashMap::default();
    let mut select = tx.prepare("SELECT id, parent, position FROM nodes ORDER BY position, id")?;
    let mut update = tx.prepare("UPDATE nodes SET jump = ?2 WHERE id = ?1")?;
    let mut rows = select.query([])?;
    while let Some(row) = rows.next()? {
        let (id, parent, position): (NodeId, Option<NodeId>, i64) =
            (row.get(0)?, row.get(1)?, row.get(2)?);
        let parent = parent.and_then(|p| links.get(&p).copied());
        let jump = parent.map(|parent| jump_for(parent, |node| links.get(&node).copied()));
        links.insert(id, Link { id, position, jump });
        update.execute(params![id, jump])?;
    }
    Ok(())
}

/// The store's schema version (0 for an empty file), refusing a file that
/// is no store and a version newer than this crate writes.
fn schema_version(tx: &Transaction<'_>, location: &str) -> Result<u32> {
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

/// Creates `path` readable by its owner only, if it does not exist.
/// Refuses a path that cannot hold a store file: an empty one, or one
/// naming what exists and is not a regular file.
pub(super) fn check_path(path: &Path) -> Result<()> {
    let location = path.display().to_string();
    if path.as_os_str().is_empty() {
        return Err(not_a_store(
            "\"\"",
            "the path is empty; give the path of a SQLite file".into(),
        ));
    }
    let Ok(metadata) = std::fs::metadata(path) else {
        // Missing (created on open) or unreadable (opening says why).
        return Ok(());
    };
    let file_type = metadata.file_type();
    if file_type.is_file() {
        return Ok(());
    }
    if file_type.is_dir() {
        return Err(not_a_store(
            &location,
            format!(
                "it is a directory, not a SQLite file; give the path of a file, e.g. {}",
                path.join("agent-context.db").display()
            ),
        ));
    }
    let what = special_file_name(&file_type).map_or_else(String::new, |name| format!(" ({name})"));
    Err(not_a_store(
        &location,
        format!("it is not a regular file{what}; give the path of a SQLite file"),
    ))
}

/// What a path that is neither a file nor a directory names.
#[cfg(unix)]
fn special_file_name(file_type: &std::fs::FileType) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    if file_type.is_char_device() {
        Some("a character device")
    } else if file_type.is_block_device() {
        Some("a block device")
    } else if file_type.is_fifo() {
        Some("a FIFO")
    } else if file_type.is_socket() {
        Some("a socket")
    } else {
        None
    }
}

#[cfg(not(unix))]
fn special_file_name(_: &std::fs::FileType) -> Option<&'static str> {
    None
}

fn create_private(path: &Path) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

fn db_error(location: &str) -> impl Fn(rusqlite::Error) -> crate::Error + '_ {
    move |error| {
        if error.sqlite_error_code() == Some(rusqlite::ErrorCode::NotADatabase) {
            let message = format!("{error} (the file is not a SQLite database; give another path)");
            return not_a_store(location, message);
        }
        let hint = match error.sqlite_error_code() {
            Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
                " (another process is writing the database and held it past the wait; retry)"
            }
            Some(rusqlite::ErrorCode::ReadOnly | rusqlite::ErrorCode::CannotOpen) => {
                " (check the file's and its directory's permissions)"
            }
            _ => "",
        };
        store_error(location, format!("{error}{hint}"))
    }
}
