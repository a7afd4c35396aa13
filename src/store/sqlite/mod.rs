//! [`SqliteStore`]: durable chats in one SQLite file (bundled SQLite, no
//! system library needed).

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::{Connection, TransactionBehavior};

mod schema;
mod statements;

use super::backend::Backend;
use super::errors::{not_a_store, store_error};
use crate::error::{ErrorKind, Result};
use statements::SqliteTx;

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
        // Room for every statement of `statements`, each prepared once.
        connection.set_prepared_statement_cache_capacity(64);
        // Refuse another database before changing anything in it.
        {
            let tx = connection.transaction().map_err(&fail)?;
            schema::version(&tx, &location)?;
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
        schema::migrate(&mut connection, &location)?;
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
}

impl Backend for SqliteStore {
    type Tx<'a> = SqliteTx<'a>;

    fn location(&self) -> &str {
        &self.location
    }

    fn read<T>(&self, work: impl FnOnce(&mut SqliteTx<'_>) -> Result<T>) -> Result<T> {
        let mut connection = self.connection();
        let tx = connection
            .transaction_with_behavior(TransactionBehavior::Deferred)
            .map_err(db_error(&self.location))?;
        work(&mut SqliteTx {
            tx,
            location: &self.location,
        })
    }

    /// The transaction takes the file's write lock as it starts, so
    /// writers from every process take turns (waiting up to
    /// [`BUSY_TIMEOUT`]).
    fn write<T>(&self, work: impl FnOnce(&mut SqliteTx<'_>) -> Result<T>) -> Result<T> {
        let mut connection = self.connection();
        let tx = connection
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(db_error(&self.location))?;
        let mut tx = SqliteTx {
            tx,
            location: &self.location,
        };
        let value = work(&mut tx)?;
        tx.tx.commit().map_err(db_error(&self.location))?;
        Ok(value)
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
        // A file cannot be made where no directory holds it: the path is
        // wrong, not the store.
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty())
            && !parent.is_dir()
        {
            let state = if parent.exists() {
                "is not a directory"
            } else {
                "does not exist"
            };
            return Err(not_a_store(
                &location,
                format!(
                    "{} {state}; give the path of a file in an existing directory",
                    parent.display()
                ),
            ));
        }
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
