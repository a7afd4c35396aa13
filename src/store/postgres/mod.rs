//! [`PostgresStore`]: durable chats on a PostgreSQL server, shared by every
//! process that points at it.

mod insert;
mod location;
mod schema;
mod statements;

use std::sync::{Mutex, PoisonError};

use postgres::{Client, IsolationLevel, NoTls};
use r2d2_postgres::PostgresConnectionManager;
use r2d2_postgres::r2d2::{ManageConnection, Pool, PooledConnection};

use super::backend::Backend;
use super::errors::store_error;
use crate::error::Result;
use location::Location;
use statements::PgTx;

/// Durable chats on a PostgreSQL server.
///
/// `open("postgres://user[:password]@host[:port]/database")` connects
/// (without TLS: see below), creates the store's tables in their own
/// schema if missing (`agent_context`, or `?schema=name`) and migrates a
/// store written by an earlier version. It keeps a pool of connections
/// (at most 8, or `?pool_size=n`) for the threads that share it, the
/// first of them the one it opened to check the schema. The
/// driver's own URL parameters (`connect_timeout`, `application_name`,
/// …) are passed on.
///
/// * **One transaction per save.** A save's chunks, counts, head and
///   system lane commit together or not at all; a client killed mid-save
///   leaves nothing of it (the server rolls its transaction back).
/// * **Writers serialize.** Every write locks its chat's row first
///   (`SELECT … FOR UPDATE`), so saves to a chat from any number of
///   processes and machines take turns; a stale one is refused with
///   [`ErrorKind::Conflict`](crate::ErrorKind::Conflict) or
///   [`ErrorKind::SystemConflict`](crate::ErrorKind::SystemConflict), and
///   none is lost. Reads see one snapshot (repeatable read).
/// * **TLS is off**: connections are plain TCP or a Unix socket, so use
///   it on loopback, a private network or through a tunnel; a URL asking
///   for `sslmode=require` fails to connect.
#[derive(Debug)]
pub struct PostgresStore {
    pool: Pool<Connections>,
    location: String,
    schema: String,
}

impl PostgresStore {
    /// Connects to the store at `url`, creating or migrating its tables.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Option`](crate::ErrorKind::Option) for a URL it cannot
    /// read; [`ErrorKind::Store`](crate::ErrorKind::Store) if the server
    /// cannot be reached or refuses, the schema holds tables that are no
    /// store, or the store was written by a later version of this crate.
    pub fn open(url: &str) -> Result<Self> {
        PostgresStore::connect(url, true)
    }

    /// Connects to the store at `url` without creating it.
    ///
    /// # Errors
    ///
    /// As [`open`](PostgresStore::open), and [`ErrorKind::Store`](crate::ErrorKind::Store)
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
        // Connected here, not by the pool, so that a server that is down
        // or refuses fails at once with the driver's reason.
        let mut client = config.connect(NoTls).map_err(db_error(&display))?;
        schema::migrate(&mut client, &schema, &display, create)?;
        let connections = Connections {
            manager: PostgresConnectionManager::new(config, NoTls),
            opened: Mutex::new(Some(client)),
        };
        let pool = Pool::builder()
            .max_size(pool_size)
            .min_idle(Some(0))
            .build_unchecked(connections);
        Ok(PostgresStore {
            pool,
            location: display,
            schema,
        })
    }

    fn client(&self) -> Result<PooledConnection<Connections>> {
        self.pool.get().map_err(|e| {
            store_error(
                &self.location,
                format!("no connection to the server: {e}; check that it is up and reachable"),
            )
        })
    }
}

/// The pool's connections: the first it lends is the one the store opened
/// to check its schema, so that a process that builds once connects once
/// (a connection costs the server a process: about 5 ms on loopback); the
/// others it opens lazily, and it checks each before lending it.
struct Connections {
    manager: PostgresConnectionManager<NoTls>,
    opened: Mutex<Option<Client>>,
}

impl ManageConnection for Connections {
    type Connection = Client;
    type Error = postgres::Error;

    fn connect(&self) -> std::result::Result<Client, postgres::Error> {
        let opened = self
            .opened
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        match opened {
            Some(client) if !client.is_closed() => Ok(client),
            _ => self.manager.connect(),
        }
    }

    fn is_valid(&self, client: &mut Client) -> std::result::Result<(), postgres::Error> {
        self.manager.is_valid(client)
    }

    fn has_broken(&self, client: &mut Client) -> bool {
        self.manager.has_broken(client)
    }
}

impl std::fmt::Debug for Connections {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connections").finish_non_exhaustive()
    }
}

impl Backend for PostgresStore {
    type Tx<'a> = PgTx<'a>;

    fn location(&self) -> &str {
        &self.location
    }

    /// The transaction is read-only and repeatable-read: every statement
    /// sees the snapshot of the first.
    fn read<T>(&self, work: impl FnOnce(&mut PgTx<'_>) -> Result<T>) -> Result<T> {
        let mut client = self.client()?;
        let tx = client
            .build_transaction()
            .isolation_level(IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .map_err(db_error(&self.location))?;
        work(&mut PgTx {
            tx,
            location: &self.location,
        })
    }

    fn write<T>(&self, work: impl FnOnce(&mut PgTx<'_>) -> Result<T>) -> Result<T> {
        let mut client = self.client()?;
        let tx = client.transaction().map_err(db_error(&self.location))?;
        let mut tx = PgTx {
            tx,
            location: &self.location,
        };
        let value = work(&mut tx)?;
        tx.tx.commit().map_err(db_error(&self.location))?;
        Ok(value)
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
