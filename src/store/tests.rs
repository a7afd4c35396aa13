//! The node-level rules no public verb reaches with bad input: a save or a
//! branch naming what is not there, and pruning what a save replaced.
//! They are written once (`verbs`, `save`) for every backend; the chat-level
//! behaviour of both backends is tested through the engine in `tests/it`.

use super::{MAIN_BRANCH, NewChunk, Nodes, Save, SqliteStore, Store};
use crate::ErrorKind;

#[test]
fn a_save_to_a_missing_branch_or_chat_is_refused() {
    let store = SqliteStore::in_memory().unwrap();
    store.open_chat("chat").unwrap();
    let save = Save::append("nope", None, Vec::new());
    assert!(matches!(
        store.save("chat", &save).unwrap_err().kind(),
        ErrorKind::Chat { .. }
    ));
    assert!(matches!(
        store.save("other", &save).unwrap_err().kind(),
        ErrorKind::Chat { .. }
    ));
    assert!(store.branches("other").is_err());
    assert!(
        store
            .create_branch("chat", "b", Some(12_345), false)
            .is_err()
    );
    assert!(store.set_checkpoint("chat", "c", Some(12_345)).is_err());
}

/// A save that replaces chunks prunes the nodes it replaced (no branch or
/// checkpoint reaches them), and its new nodes take ids past every node's.
#[test]
fn a_replaced_chunk_is_pruned_and_new_nodes_take_new_ids() {
    let chunk = |id: &str| NewChunk::new(id.into(), format!("{{\"id\":\"{id}\"}}"), None);
    let store = SqliteStore::in_memory().unwrap();
    store.open_chat("chat").unwrap();
    let first = Save::append(MAIN_BRANCH, None, vec![chunk("a"), chunk("b")]);
    let first = store.save("chat", &first).unwrap().nodes;
    let (a, mut newest) = (first[0], first[1]);
    for id in ["c", "d", "e"] {
        let save =
            Save::append(MAIN_BRANCH, Some(newest), vec![chunk(id)]).replacing(newest, Some(a));
        let saved = store.save("chat", &save).unwrap();
        assert!(saved.nodes[0] > newest, "{saved:?} after {newest}");
        assert!(store.read_back("chat", newest, 1, None).unwrap().is_empty());
        assert_eq!(store.head("chat", MAIN_BRANCH).unwrap().chunks, 2);
        newest = saved.nodes[0];
    }
}
