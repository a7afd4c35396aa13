//! The errors every backend reports the same way.

use super::{NodeId, Save};
use crate::error::{ErrorKind, Result};

pub(super) fn store_error(location: &str, message: String) -> crate::Error {
    ErrorKind::Store {
        location: location.to_owned(),
        message,
    }
    .into()
}

/// The database at `location` is no store this version can open.
pub(super) fn not_a_store(location: &str, message: String) -> crate::Error {
    ErrorKind::NotAStore {
        location: location.to_owned(),
        message,
    }
    .into()
}

pub(super) fn chat_error(chat: &str, message: String) -> crate::Error {
    ErrorKind::Chat {
        chat: chat.to_owned(),
        message,
    }
    .into()
}

pub(super) fn no_chat(chat: &str) -> crate::Error {
    chat_error(chat, "no such chat in the store".into())
}

pub(super) fn no_branch(chat: &str, branch: &str) -> crate::Error {
    chat_error(
        chat,
        format!("no branch named {branch:?}; list them with `chat branches`"),
    )
}

pub(super) fn no_node(chat: &str, node: NodeId) -> crate::Error {
    chat_error(chat, format!("node {node} is not a node of this chat"))
}

pub(super) fn unreadable_metadata(
    location: &str,
    chat: &str,
    error: &serde_json::Error,
) -> crate::Error {
    store_error(
        location,
        format!("chat {chat:?} has unreadable metadata: {error}"),
    )
}

/// Refuses `save` unless the branch's head is `head` and, when it writes
/// the system lane, the lane's version is `system_version`.
pub(super) fn check_expected(
    chat: &str,
    save: &Save,
    head: Option<NodeId>,
    system_version: u64,
) -> Result<()> {
    if head != save.expected_head {
        return Err(ErrorKind::Conflict {
            chat: chat.to_owned(),
            branch: save.branch.clone(),
            expected: save.expected_head,
            actual: head,
        }
        .into());
    }
    if save.system.is_some() && system_version != save.expected_system_version {
        return Err(ErrorKind::SystemConflict {
            chat: chat.to_owned(),
            expected: save.expected_system_version,
            actual: system_version,
        }
        .into());
    }
    Ok(())
}

/// Refuses a branch or checkpoint name no one could type.
pub(super) fn check_name(chat: &str, name: &str, what: &str) -> Result<()> {
    if name.is_empty() {
        return Err(chat_error(chat, format!("a {what} name cannot be empty")));
    }
    Ok(())
}

/// Refuses a chat id no one could type.
pub(super) fn check_chat_id(chat: &str) -> Result<()> {
    if chat.is_empty() {
        return Err(chat_error(chat, "a chat id cannot be empty".into()));
    }
    Ok(())
}

pub(super) fn branch_exists(chat: &str, name: &str) -> crate::Error {
    chat_error(
        chat,
        format!("a branch named {name:?} exists; choose another name"),
    )
}

/// Refuses a store whose schema `version` is newer than `current`, the
/// newest this crate reads.
pub(super) fn check_schema_version(location: &str, version: u32, current: u32) -> Result<()> {
    if version > current {
        return Err(not_a_store(
            location,
            format!(
                "the store has schema version {version}, written by a later version of \
                 agent-context; this one reads up to version {current}: upgrade agent-context"
            ),
        ));
    }
    Ok(())
}
