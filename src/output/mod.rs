//! What a build returns: the [`BuildResult`](crate::BuildResult) (its
//! messages, counts and decisions), the work it did
//! ([`BuildStats`](crate::BuildStats)), and what the next build of a
//! session reads of it (`last_build`).

pub(crate) mod cache;
pub(crate) mod earlier;
pub(crate) mod last_build;
pub(crate) mod message;
pub(crate) mod message_text;
pub(crate) mod report_in;
pub(crate) mod result;
pub(crate) mod stats;
