//! The node-level rules no public verb reaches with bad input: a save or a
//! branch naming what is not there, and pruning what a save replaced.
//! They are written once (`verbs`, `save`) over each backend's statements,
//! so each runs on SQLite and, with the `postgres` feature, on the server
//! `AGENT_CONTEXT_TEST_POSTGRES` names (as `tests/it` does).

use super::{MAIN_BRANCH, NewChunk, Save, SqliteStore, Store};
use crate::ErrorKind;

/// The test server's schemas, as the integration tests make them (its
/// `client` is theirs alone).
#[cfg(feature = "postgres")]
#[allow(dead_code)]
#[path = "../../tests/it/common/postgres.rs"]
mod test_server;

/// What a backend's store leaves behind to clean up: a schema of its own
/// on the test server.
#[cfg(feature = "postgres")]
type Scratch = test_server::Schema;
#[cfg(not(feature = "postgres"))]
type Scratch = ();

/// A backend to test, with what to clean up after it.
struct Backend {
    name: &'static str,
    store: Box<dyn Store>,
    _scratch: Option<Scratch>,
}

/// SQLite in memory, and a PostgreSQL schema of its own with the feature.
#[cfg_attr(not(feature = "postgres"), allow(unused_variables, unused_mut))]
fn backends(tag: &str) -> Vec<Backend> {
    let sqlite = Backend {
        name: "sqlite",
        store: Box::new(SqliteStore::in_memory().unwrap()),
        _scratch: None,
    };
    let mut backends = vec![sqlite];
    #[cfg(feature = "postgres")]
    {
        let schema = test_server::Schema::new(tag);
        let store = super::PostgresStore::open(schema.url()).unwrap();
        backends.push(Backend {
            name: "postgres",
            store: Box::new(store),
            _scratch: Some(schema),
        });
    }
    backends
}

#[test]
fn a_save_to_a_missing_branch_or_chat_is_refused() {
    for backend in backends("missing") {
        refuses_what_is_not_there(backend.store.as_ref());
    }
}

fn refuses_what_is_not_there(store: &dyn Store) {
    let store_nodes = store.nodes(super::TOKEN);
    store.open_chat("chat").unwrap();
    let save = Save::append("nope", None, Vec::new());
    assert!(matches!(
        store_nodes.save("chat", &save).unwrap_err().kind(),
        ErrorKind::Chat { .. }
    ));
    assert!(matches!(
        store_nodes.save("other", &save).unwrap_err().kind(),
        ErrorKind::Chat { .. }
    ));
    assert!(store.branches("other").is_err());
    assert!(
        store_nodes
            .create_branch("chat", "b", Some(12_345), false)
            .is_err()
    );
    assert!(
        store_nodes
            .set_checkpoint("chat", "c", Some(12_345))
            .is_err()
    );
}

/// A save that replaces chunks prunes the nodes it replaced (no branch or
/// checkpoint reaches them), and its new nodes take ids past every node's.
#[test]
fn a_replaced_chunk_is_pruned_and_new_nodes_take_new_ids() {
    for backend in backends("pruned") {
        prunes_and_takes_new_ids(backend.store.as_ref(), backend.name);
    }
}

fn prunes_and_takes_new_ids(store: &dyn Store, name: &str) {
    let chunk = |id: &str| NewChunk::new(id.into(), format!("{{\"id\":\"{id}\"}}"), None);
    store.open_chat("chat").unwrap();
    let nodes = store.nodes(super::TOKEN);
    let first = Save::append(MAIN_BRANCH, None, vec![chunk("a"), chunk("b")]);
    let first = nodes.save("chat", &first).unwrap().nodes;
    let (a, mut newest) = (first[0], first[1]);
    for id in ["c", "d", "e"] {
        let save =
            Save::append(MAIN_BRANCH, Some(newest), vec![chunk(id)]).replacing(newest, Some(a));
        let saved = nodes.save("chat", &save).unwrap();
        assert!(saved.nodes[0] > newest, "{name}: {saved:?} after {newest}");
        assert!(nodes.read_back("chat", newest, 1, None).unwrap().is_empty());
        assert_eq!(nodes.head("chat", MAIN_BRANCH).unwrap().chunks, 2);
        newest = saved.nodes[0];
    }
}
