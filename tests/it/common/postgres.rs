//! The PostgreSQL server the `postgres` feature's tests run against:
//! `AGENT_CONTEXT_TEST_POSTGRES`, which `.ci/with-postgres` sets.

use std::sync::atomic::{AtomicUsize, Ordering};

/// The server's URL. Without one the tests fail: a build with the
/// `postgres` feature is tested against a real server or not at all.
pub fn server_url() -> String {
    std::env::var("AGENT_CONTEXT_TEST_POSTGRES").unwrap_or_else(|_| {
        panic!(
            "AGENT_CONTEXT_TEST_POSTGRES is not set: run the tests through \
             `.ci/with-postgres cargo test --features postgres`, or point it at a server \
             (postgres://user@host:port/database)"
        )
    })
}

/// A schema of its own on the server, for one test's store; dropped with
/// what it holds on drop (also when the test panics).
pub struct Schema {
    name: String,
    url: String,
}

impl Schema {
    /// `t_{tag}_{pid}_{n}`, unique on the server while the process runs.
    pub fn new(tag: &str) -> Schema {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let name = format!("t_{tag}_{}_{n}", std::process::id());
        let url = format!("{}?schema={name}", server_url());
        let schema = Schema { name, url };
        schema.drop_schema();
        schema
    }

    /// The store URL naming this schema.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// A plain client on the server, with this schema on its search path.
    pub fn client(&self) -> postgres::Client {
        let mut client = postgres::Client::connect(&server_url(), postgres::NoTls)
            .expect("connect to the test server");
        client
            .batch_execute(&format!("SET search_path TO {}", self.name))
            .expect("set the search path");
        client
    }

    fn drop_schema(&self) {
        if let Ok(mut client) = postgres::Client::connect(&server_url(), postgres::NoTls) {
            let _ = client.batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name));
        }
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        self.drop_schema();
    }
}
