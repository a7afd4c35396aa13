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
        // Every statement names its tables unqualified: the search path
        // puts them in the store's schema. `schema` is a plain identifier,
        // so it needs no quoting here.
        let options = match config.get_options() {
            Some(options) => format!("{options} -c search_path={schema}"),
            None => format!("-c search_path={schema}"),
        };
        config.options(&options);
        let display = display(&config, &schema);
        Ok(Location {
            config,
            schema,
            pool_size,
            display,
        })
    }
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
            Some("-c search_path=fleet_a")
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
        ] {
            let error = Location::parse(url).unwrap_err().to_string();
            assert!(error.contains(names), "{url}: {error}");
        }
    }
}
