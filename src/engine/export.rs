//! Writing a branch as the session JSON, a page of chunks at a time.

use std::io::Write;

use super::ContextEngine;
use super::load::decode_chunk;
use crate::error::{ErrorKind, Result};
use crate::model::memory::MemoryChunk;

/// Where the chunks go in the pretty session JSON of a lane without them.
const NO_CHUNKS: &str = "\n  \"chunks\": []";

impl ContextEngine {
    /// Writes the branch at the engine's head (with pending changes) as
    /// the session JSON, pretty-printed, byte for byte what
    /// `serde_json::to_string_pretty` writes for [`state`](Self::state),
    /// with a final newline. Stored chunks are read a page at a time, so
    /// memory does not grow with the chat; an error part-way leaves the
    /// output cut short.
    ///
    /// # Errors
    ///
    /// As [`state`](Self::state); [`ErrorKind::Io`] if `out` fails.
    pub fn export(&mut self, out: &mut dyn Write) -> Result<()> {
        let io = |source: std::io::Error| ErrorKind::Io {
            context: "writing the export".into(),
            source,
        };
        let mut lane = self.held().clone();
        let chunks = std::mem::take(&mut lane.chunks);
        let text = serde_json::to_string_pretty(&lane).unwrap_or_default();
        let Some(at) = text.find(NO_CHUNKS) else {
            return Err(ErrorKind::Io {
                context: "writing the export".into(),
                source: std::io::Error::other("the session JSON has no chunks field"),
            }
            .into());
        };
        let (head, tail) = (&text[..at], &text[at + NO_CHUNKS.len()..]);
        write!(out, "{head}\n  \"chunks\": [").map_err(io)?;
        let mut written = 0;
        let mut write_chunk = |chunk: &MemoryChunk| -> Result<()> {
            let separator = if written == 0 { "" } else { "," };
            let pretty = serde_json::to_string_pretty(chunk).unwrap_or_default();
            write!(out, "{separator}\n    {}", pretty.replace('\n', "\n    ")).map_err(io)?;
            written += 1;
            Ok(())
        };
        if self.nodes.is_none() {
            let location = self.store.location();
            self.nodes()
                .for_each_chunk(&self.chat, self.head, None, &mut |stored| {
                    write_chunk(&decode_chunk(stored.position, &stored, &location)?)
                })?;
        }
        chunks.iter().try_for_each(&mut write_chunk)?;
        let close = if written == 0 { "]" } else { "\n  ]" };
        writeln!(out, "{close}{tail}").map_err(io)?;
        out.flush().map_err(io)?;
        Ok(())
    }
}
