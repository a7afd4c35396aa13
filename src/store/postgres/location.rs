//! Reading a `postgres://` URL: the connection settings the driver takes,
//! and the store's own parameters (`schema`, `pool_size`), which it does
//! not.

use std::str::FromStr;
use std::time::Duration;

use postgres::Config;
use postgres::config::Host;

use crate::error::{ErrorKind, Result};

/// The schema a store lives in unless the URL names another.
pub const DEFAULT_SCHEMA: &str = "agent_context";

/// How many connections a store keeps open at most unless the URL says.
pub const DEFAULT_POOL_SIZE: u32 = 8;

/// How long connecting may take before it fails, unless the URL says.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a write waits for another writer's lock on its chat before it
/// fails, unless the URL's `options` say (SQLite's writers wait as long).
pub(super) const LOCK_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a transaction may sit idle, its client silent, before the
/// server ends it and releases its locks (a save never pauses between
/// statements).
const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// A parsed store URL.
#[derive(Debug)]
pub(super) struct Location {
    /// The driver's settings, with the schema first on the search path.
    pub config: Config,
    pub schema: String,
    pub pool_size: u32,
    /// The URL without its password, for messages.
    pub display: String,
}

impl Location {
    /// Reads `url`: `postgres://user[:password]@host[:port]/database`,
    /// with the driver's parameters (`sslmode`, `connect_timeout`, …) and
    /// the store's (`schema`, `pool_size`).
    pub fn parse(url: &str) -> Result<Location> {
        let (base, query) = url.split_once('?').unwrap_or((url, ""));
        let authority = base.split_once("://").map_or(base, |(_, rest)| rest);
        let authority = authority.split_once('/').map_or(authority, |(a, _)| a);
        if authority.matches('@').count() > 1 {
            // The driver would split at the first `@` and name the rest of
            // the password as the host in its messages.
            return Err(bad_url(
                "more than one `@` before the host: write an `@` in the user name or password \
                 as %40"
                    .into(),
            ));
        }
        let mut schema = DEFAULT_SCHEMA.to_owned();
        let mut pool_size = DEFAULT_POOL_SIZE;
        let mut driver_params = Vec::new();
        for param in query.split('&').filter(|p| !p.is_empty()) {
            match param.split_once('=') {
                Some(("schema", value)) => schema = checked_schema(value)?,
                Some(("pool_size", value)) => pool_size = checked_pool_size(value)?,
                _ => driver_params.push(param),
            }
        }
        let driver_url = match driver_params.is_empty() {
            true => base.to_owned(),
            false => format!("{base}?{}", driver_params.join("&")),
        };
        let mut config = Config::from_str(&driver_url).map_err(|e| {
            bad_url(format!(
                "{}: write it as postgres://user[:password]@host[:port]/database[?schema=name]",
                super::describe(&e)
            ))
        })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        config.options(&session_options(config.get_options(), &schema));
        let display = display(&config, &schema);
        Ok(Location {
            config,
            schema,
            pool_size,
            display,
        })
    }
}

/// The settings every connection starts with: the caller's `options`,
/// then the store's. Statements name their tables unqualified, so the
/// search path puts them in the store's schema (a checked lower-case name,
/// which the setting takes as it is). A writer waits at most
/// [`LOCK_TIMEOUT`] for another's lock on a chat, as SQLite's writers wait
/// for the file, and a transaction left idle by a stalled client is ended,
/// releasing its locks; a caller's own setting of either is kept.
fn session_options(caller: Option<&str>, schema: &str) -> String {
    let mut options = caller.unwrap_or_default().to_owned();
    for (name, value) in [
        ("lock_timeout", LOCK_TIMEOUT),
        ("idle_in_transaction_session_timeout", IDLE_TIMEOUT),
    ] {
        if !options.contains(name) {
            options.push_str(&format!(" -c {name}={}ms", value.as_millis()));
        }
    }
    options.push_str(&format!(" -c search_path={schema}"));
    options.trim_start().to_owned()
}

/// A schema name the store can put in SQL as it is: a lower-case
/// identifier, as PostgreSQL folds unquoted names.
fn checked_schema(name: &str) -> Result<String> {
    let mut chars = name.chars();
    let starts_well = chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_');
    let rest_well = chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if starts_well && rest_well && name.len() <= 63 {
        Ok(name.to_owned())
    } else {
        Err(bad_url(format!(
            "schema={name:?} is not a schema name the store accepts: use 1 to 63 lower-case \
             letters, digits and underscores, starting with a letter or underscore"
        )))
    }
}

fn checked_pool_size(value: &str) -> Result<u32> {
    match value.parse::<u32>() {
        Ok(size @ 1..=1024) => Ok(size),
        _ => Err(bad_url(format!(
            "pool_size={value:?} is not a pool size: give a number of connections from 1 to 1024"
        ))),
    }
}

/// `postgres://user@host:port/database?schema=name`, without the password.
fn display(config: &Config, schema: &str) -> String {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, host)| {
            let name = match host {
                Host::Tcp(name) => name.clone(),
                #[cfg(unix)]
                Host::Unix(path) => path.display().to_string(),
            };
            match config.get_ports().get(i).or(config.get_ports().first()) {
                Some(port) => format!("{name}:{port}"),
                None => name,
            }
        })
        .collect();
    let user = config
        .get_user()
        .map(|u| format!("{u}@"))
        .unwrap_or_default();
    let database = config.get_dbname().unwrap_or_default();
    format!(
        "postgres://{user}{}/{database}?schema={schema}",
        hosts.join(",")
    )
}

fn bad_url(message: String) -> crate::Error {
    ErrorKind::Option {
        option: "db".into(),
        message: format!("invalid PostgreSQL URL: {message}"),
    }
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_parameters_are_taken_out_and_the_password_hidden() {
        let location =
            Location::parse("postgres://ops:secret@db.internal:6543/chats?schema=fleet_a&pool_size=3&sslmode=disable")
                .unwrap();
        assert_eq!(location.schema, "fleet_a");
        assert_eq!(location.pool_size, 3);
        assert_eq!(
            location.display,
            "postgres://ops@db.internal:6543/chats?schema=fleet_a"
        );
        assert_eq!(
            location.config.get_options(),
            Some(
                "-c lock_timeout=30000ms -c idle_in_transaction_session_timeout=60000ms \
                 -c search_path=fleet_a"
            )
        );
        let own = Location::parse("postgres://h/db?options=-c%20lock_timeout%3D5s").unwrap();
        assert_eq!(
            own.config.get_options(),
            Some(
                "-c lock_timeout=5s -c idle_in_transaction_session_timeout=60000ms \
                 -c search_path=agent_context"
            )
        );
        let default = Location::parse("postgresql://localhost/db").unwrap();
        assert_eq!(default.schema, DEFAULT_SCHEMA);
        assert_eq!(default.pool_size, DEFAULT_POOL_SIZE);
    }

    #[test]
    fn bad_parameters_are_refused_by_name() {
        for (url, names) in [
            ("postgres://h/db?schema=Drop;Table", "schema="),
            ("postgres://h/db?schema=", "schema="),
            ("postgres://h/db?pool_size=0", "pool_size="),
            ("postgres://h/db?frobnicate=1", "invalid PostgreSQL URL"),
            ("postgres://u:p@ss@h/db", "%40"),
        ] {
            let error = Location::parse(url).unwrap_err().to_string();
            assert!(error.contains(names), "{url}: {error}");
        }
    }
}
