//! Where a chat's build starts: the engine's own last build, the branch's
//! last build as the store keeps it, or nothing; and the record it keeps
//! for the next build (see `record`).

use super::ContextEngine;
use super::newest::NewestBuild;
use super::record::BuildRecord;
use crate::budget::Fate;
use crate::error::Result;
use crate::output::last_build::LastBuild;
use crate::output::result::{BuildResult, PreviousBuild};

/// What a build extends.
pub(super) enum Start {
    /// The last build of the engine's session, which holds every chunk.
    Own,
    /// The branch's last build, as the store keeps it.
    Kept(Box<BuildRecord>),
    /// Nothing, for this reason.
    Cold(PreviousBuild),
}

impl Start {
    /// The kept record this build extends, if it does.
    pub(super) fn record(&self) -> Option<&BuildRecord> {
        match self {
            Start::Kept(record) => Some(record),
            _ => None,
        }
    }

    /// What the report says of it.
    pub(super) fn outcome(&self) -> PreviousBuild {
        match self {
            Start::Own | Start::Kept(_) => PreviousBuild::Extended,
            Start::Cold(cause) => *cause,
        }
    }
}

impl BuildRecord {
    /// The last build as a session takes it, to repeat its cut.
    pub(super) fn resumed(&self) -> LastBuild {
        LastBuild::resumed(
            self.marks.clone(),
            self.fingerprints.clone(),
            self.summary.clone(),
        )
    }
}

impl ContextEngine {
    /// Where a build under plan key `key` starts (see [`Start`]).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Store`](crate::ErrorKind::Store) if the store fails.
    pub(super) fn start(&self, key: Option<&str>) -> Result<Start> {
        if self.nodes.is_some() && self.session.last_build().is_some() {
            return Ok(Start::Own);
        }
        let Some(key) = key else {
            return Ok(Start::Cold(PreviousBuild::NotKept));
        };
        let Some(head) = self.head else {
            return Ok(Start::Cold(PreviousBuild::NoneKept));
        };
        let Some(text) = self.nodes().last_build(&self.chat, &self.branch)? else {
            return Ok(Start::Cold(PreviousBuild::NoneKept));
        };
        let Some(record) = BuildRecord::decode(&text) else {
            return Ok(Start::Cold(PreviousBuild::Unreadable));
        };
        if record.key != key {
            return Ok(Start::Cold(PreviousBuild::OtherSettings));
        }
        let descends = match record.chunks.checked_sub(1) {
            Some(last) if record.chunks <= self.stored => {
                self.nodes().ancestor(&self.chat, head, last)? == Some(record.head)
            }
            _ => false,
        };
        if !descends {
            return Ok(Start::Cold(PreviousBuild::HeadMoved));
        }
        Ok(Start::Kept(Box::new(record)))
    }

    /// The record of `built`, a build from the newest chunks: the chunks
    /// it did not read keep the marks of the build it extends
    /// (`extended`), or were dropped.
    pub(super) fn record_of_newest(
        &self,
        key: String,
        extended: Option<&BuildRecord>,
        built: &NewestBuild,
    ) -> Option<BuildRecord> {
        let head = self.head?;
        let marks = match extended {
            Some(record) => record.marks.clone(),
            None => vec![Fate::Dropped; self.stored],
        };
        let planned = (built.positions.iter().copied()).zip(&built.chunks);
        let at = (head, self.stored, key);
        Some(BuildRecord::of_build(
            at,
            marks,
            built.unread,
            planned,
            &built.result,
        ))
    }

    /// The record of the session's last build, `result`, over every chunk:
    /// none while chunks are pending (the build is not of the stored head).
    pub(super) fn record_of_session(
        &self,
        key: String,
        result: &BuildResult,
    ) -> Option<BuildRecord> {
        let head = self.head.filter(|_| !self.has_pending())?;
        let marks = self.session.last_build()?.cut.marks()?.to_vec();
        let nodes = self.nodes.as_ref()?;
        let planned = (nodes.iter().copied().enumerate()).zip(&self.held().chunks);
        let at = (head, self.stored, key);
        Some(BuildRecord::of_build(
            at,
            marks,
            (0, (0, 0)),
            planned,
            result,
        ))
    }

    /// Keeps `record` for the next build; a warning in `warnings` when the
    /// store refuses it (a read-only store still builds).
    pub(super) fn keep_record(&self, record: &BuildRecord, warnings: &mut Vec<String>) {
        let kept = (self.nodes()).keep_last_build(&self.chat, &self.branch, &record.encode());
        if let Err(error) = kept {
            warnings.push(format!(
                "this build could not be kept for the next one to extend, so a build in \
                 another process starts cold: {error}"
            ));
        }
    }
}
