//! Branches and checkpoints of the engine's chat.

use super::ContextEngine;
use crate::error::{ErrorKind, Result};
use crate::store::{BranchSummary, CheckpointSummary, NodeId};

impl ContextEngine {
    /// Starts a new branch at the parent of the stored chunk `chunk_id`
    /// (the branch holds what came before it) and switches to it; the old
    /// branch stays as it was. The new branch is `name`, or the current
    /// branch's name with the next free `-vN` suffix (`main-v2`, `main-v3`…).
    /// Returns the new branch's name.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Chat`] if there are unsaved changes, no stored chunk of
    /// the branch has `chunk_id`, or `name` is taken.
    pub fn rewind(&mut self, chunk_id: &str, name: Option<&str>) -> Result<String> {
        self.require_saved("rewind")?;
        let found = match self.head {
            Some(head) => self.nodes().find_chunk(&self.chat, head, chunk_id)?,
            None => None,
        };
        let Some(found) = found else {
            return Err(self.chat_error(format!(
                "no chunk of branch {:?} has the id {chunk_id:?}",
                self.branch
            )));
        };
        self.branch_off(found.parent, name)
    }

    /// Starts a new branch at checkpoint `checkpoint` and switches to it,
    /// as [`rewind`](ContextEngine::rewind) does. Returns its name.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Chat`] if there are unsaved changes, there is no such
    /// checkpoint, or `name` is taken.
    pub fn restore(&mut self, checkpoint: &str, name: Option<&str>) -> Result<String> {
        self.require_saved("restore")?;
        let checkpoints = self.store.checkpoints(&self.chat)?;
        let Some(found) = checkpoints.iter().find(|c| c.name == checkpoint) else {
            return Err(self.chat_error(format!(
                "no checkpoint named {checkpoint:?}; list them with `chat branches`"
            )));
        };
        self.branch_off(found.node, name)
    }

    /// Creates branch `name` at the saved head without switching to it
    /// (pending changes stay pending here).
    ///
    /// The saved head is this engine's: the chunks it has loaded and shows.
    /// If another writer has since moved the branch, the fork is still made
    /// where this engine stands (what its caller sees is what gets named);
    /// the engine learns of the move at its next [`save`](Self::save), as a
    /// `Conflict`. [`checkpoint`](Self::checkpoint) does the same.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Chat`] if `name` is taken or empty.
    pub fn fork(&mut self, name: &str) -> Result<()> {
        self.nodes()
            .create_branch(&self.chat, name, self.head, false)
    }

    /// Switches to branch `name`, making it the chat's active branch, and
    /// loads it.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Chat`] if there are unsaved changes or no such branch.
    pub fn switch_branch(&mut self, name: &str) -> Result<()> {
        self.require_saved("switch branches")?;
        self.nodes().switch_branch(&self.chat, name)?;
        self.branch = name.to_owned();
        self.load()
    }

    /// Names the saved head as checkpoint `name` (moving the name if it
    /// exists); pending changes are not part of it.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Chat`] if `name` is empty.
    pub fn checkpoint(&mut self, name: &str) -> Result<()> {
        self.nodes().set_checkpoint(&self.chat, name, self.head)
    }

    /// The chat's branches.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Store`] if the store fails.
    pub fn branches(&self) -> Result<Vec<BranchSummary>> {
        self.store.branches(&self.chat)
    }

    /// The chat's checkpoints.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Store`] if the store fails.
    pub fn checkpoints(&self) -> Result<Vec<CheckpointSummary>> {
        self.store.checkpoints(&self.chat)
    }

    /// Creates a branch at `head`, named `name` or after the current one,
    /// switches to it and loads it.
    fn branch_off(&mut self, head: Option<NodeId>, name: Option<&str>) -> Result<String> {
        let name = match name {
            Some(name) => name.to_owned(),
            None => self.next_version_name()?,
        };
        self.nodes().create_branch(&self.chat, &name, head, true)?;
        self.branch.clone_from(&name);
        self.load()?;
        Ok(name)
    }

    /// `main-v2` for `main` (or `main-v3` if taken…), `main-v3` for `main-v2`.
    fn next_version_name(&self) -> Result<String> {
        let base = match self.branch.rsplit_once("-v") {
            Some((base, n)) if !base.is_empty() && n.parse::<u32>().is_ok() => base,
            _ => &self.branch,
        };
        let taken: Vec<String> = self.branches()?.into_iter().map(|b| b.name).collect();
        let name = (2u64..)
            .map(|n| format!("{base}-v{n}"))
            .find(|name| !taken.contains(name))
            .unwrap_or_default();
        Ok(name)
    }

    fn require_saved(&self, action: &str) -> Result<()> {
        if self.has_pending() {
            return Err(self.chat_error(format!(
                "cannot {action} with unsaved changes: save() them first, or reload() to drop them"
            )));
        }
        Ok(())
    }

    fn chat_error(&self, message: String) -> crate::Error {
        ErrorKind::Chat {
            chat: self.chat.clone(),
            message,
        }
        .into()
    }
}
