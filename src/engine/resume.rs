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
use crate::tokens::known;

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
    /// The last build as a session of every chunk takes it, to repeat its
    /// cut.
    pub(super) fn resumed(&self) -> LastBuild {
        self.resumed_with(self.marks.clone())
    }

    /// The last build as a build of some chunks takes it: `marks` are the
    /// record's fates of those chunks, in order.
    pub(super) fn resumed_with(&self, marks: Vec<Fate>) -> LastBuild {
        LastBuild::resumed(marks, self.fingerprints.clone(), self.summary.clone())
    }
}

impl ContextEngine {
    /// Where a build under plan key `key` starts (see [`Start`]); a
    /// record the store fails to read is no record, with a warning in
    /// `warnings`.
    pub(super) fn start(&self, key: Option<&str>, warnings: &mut Vec<String>) -> Result<Start> {
        if self.nodes.is_some() && self.session.last_build().is_some() {
            return Ok(Start::Own);
        }
        let Some(key) = key else {
            return Ok(Start::Cold(PreviousBuild::NotKept));
        };
        let Some(head) = self.head else {
            return Ok(Start::Cold(PreviousBuild::NoneKept));
        };
        if self.replaced_from.is_some() {
            // A replaced chunk rewrites the branch from there: its mark is
            // not the new chunk's.
            return Ok(Start::Cold(PreviousBuild::HeadMoved));
        }
        let text = match self.nodes().last_build(&self.chat, &self.branch) {
            Ok(Some(text)) => text,
            Ok(None) => return Ok(Start::Cold(PreviousBuild::NoneKept)),
            Err(error) => {
                warnings.push(format!(
                    "the branch's last build could not be read, so this one starts cold: {error}"
                ));
                return Ok(Start::Cold(PreviousBuild::Unreadable));
            }
        };
        let record = match BuildRecord::decode(&text, self.stored) {
            Ok(record) => record,
            Err(cause) => return Ok(Start::Cold(cause)),
        };
        if record.key != key {
            return Ok(Start::Cold(PreviousBuild::OtherSettings));
        }
        let descends = match record.chunks.checked_sub(1) {
            Some(last) => self.nodes().ancestor(&self.chat, head, last)? == Some(record.head),
            None => false,
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

    /// Readies what a build from `record` counts with: the counts it keeps
    /// of the builds' own texts, which the counter then answers without
    /// its tables; and the tables, loading while the store reads, unless
    /// the record may know every count the build needs: it has such
    /// counts, and no chunk came after it (one that did may have no count
    /// stored).
    pub(super) fn ready_counts(&self, record: Option<&BuildRecord>) {
        if let Some(record) = record {
            known::remember(&record.counts);
        }
        let knows_every_count = record.is_some_and(|record| {
            !record.counts.is_empty() && record.chunks == self.stored && !self.has_pending()
        });
        if !knows_every_count {
            self.load_tables_while_reading();
        }
    }

    /// Keeps `record` for the next build; a warning in `warnings` when the
    /// store refuses it (a read-only store still builds).
    pub(super) fn keep_record(&self, record: &BuildRecord, warnings: &mut Vec<String>) {
        let text = record.encode();
        let kept = (self.nodes()).keep_last_build(&self.chat, &self.branch, record.chunks, &text);
        if let Err(error) = kept {
            warnings.push(format!(
                "this build could not be kept for the next one to extend, so a build in \
                 another process starts cold: {error}"
            ));
        }
    }
}
