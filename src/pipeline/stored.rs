//! The counts a store keeps beside each chunk, so that a fresh process
//! plans a stored chat without tokenizing it again.
//!
//! A chunk's counts hold for the text it renders to, so they are kept
//! under a *count key* naming everything that shapes that text and its
//! tokens: this crate's version and [`COUNT_FORMAT`], the encoding, the
//! escape mode and the protected tags. Only builds whose chunks all fall to the default
//! renderers and whose counts are exact have a key: a custom renderer or
//! counter is code the key cannot name, and an estimate's factor moves.
//! Only a chunk's whole rendering is kept; one a cap cuts is rendered and
//! counted again by the build that cuts it.

use std::hash::{Hash, Hasher};

use super::{Build, BuildCache};
use crate::error::Result;
use crate::model::roles::Role;
use crate::settings::Settings;
use crate::tokens::parts::CountedText;
use crate::tokens::{Encoding, Route, route};

/// The version of what a kept count means: bumped whenever a chunk's
/// rendering or the layout of its kept counts changes, so that counts kept
/// by a build of the same crate version before the change are not read as
/// counts of the new rendering. (A release bumps the crate version too.)
const COUNT_FORMAT: u32 = 2;

/// The encoding kept counts are counted with, or `None` when the counts
/// of builds with `settings` cannot be kept (see the module's docs). Known
/// from the model's name: no tables are loaded.
fn kept_encoding(settings: &Settings) -> Option<Encoding> {
    if settings.counter.is_some()
        || !settings.renderers.only_default()
        || settings.content.format().is_none()
    {
        return None;
    }
    match route(&settings.model) {
        Route::Exact(encoding) => Some(encoding),
        _ => None,
    }
}

/// The key the counts of builds with `settings` are kept under, or `None`
/// when they cannot be kept (see the module's docs).
pub(crate) fn count_key(settings: &Settings) -> Option<String> {
    let encoding = kept_encoding(settings)?;
    let mut hasher = rustc_hash::FxHasher::default();
    (
        settings.escape,
        settings.renderers.protocol(),
        settings.content.format(),
        settings.renderers.tag_set().names(),
    )
        .hash(&mut hasher);
    Some(format!(
        "{}+{COUNT_FORMAT} {} {:016x}",
        env!("CARGO_PKG_VERSION"),
        encoding.name(),
        hasher.finish()
    ))
}

/// Puts kept counts (`(index, counts)`, as [`Build::counts_to_keep`]
/// wrote them) in the empty slots of `cache`; counts that do not read are
/// left out, and the chunk is counted when built. Builds with `settings`
/// whose counts cannot be kept take none.
pub(crate) fn seed_counts<'a>(
    settings: &Settings,
    kept: impl IntoIterator<Item = (usize, &'a str)>,
    cache: &mut BuildCache,
) {
    let Some(encoding) = kept_encoding(settings) else {
        return;
    };
    cache.count_with(encoding.name());
    for (index, text) in kept {
        if let Some((role, part)) = decode(text) {
            cache.seed(index, role, part);
        }
    }
}

impl Build<'_> {
    /// The counts to keep of the chunks at `indices`, each whole rendering
    /// taken from the cache or rendered and counted into it; `None` for a
    /// chunk the cache holds cut by a cap.
    ///
    /// # Errors
    ///
    /// As [`Preparer::prepare`](super::ready::Preparer::prepare).
    pub(crate) fn counts_to_keep(
        self,
        indices: impl ExactSizeIterator<Item = usize>,
    ) -> Result<Vec<Option<String>>> {
        let (state, preparer, cache) = (self.state, self.preparer, self.cache);
        cache.count_with(preparer.counter.encoding_name());
        let mut kept = Vec::with_capacity(indices.len());
        for index in indices {
            let chunk = &state.chunks[index];
            if !cache.holds(index) {
                let renderer = self.settings.renderers.renderer_for(chunk);
                cache.prepared(index, None, || {
                    preparer.prepare(index, chunk, renderer, None)
                })?;
            }
            kept.push(cache.whole(index).map(|(role, part)| encode(role, part)));
        }
        Ok(kept)
    }
}

/// `role head tail_alone tail_joined clean_start`, e.g. `user 812 3 4 1`.
fn encode(role: Role, part: &CountedText) -> String {
    let [head, alone, joined] = part.counts();
    let clean = u8::from(part.clean_start);
    format!("{} {head} {alone} {joined} {clean}", role.as_str())
}

/// The tokens alone of a chunk whose counts [`counts_to_keep`] wrote.
///
/// [`counts_to_keep`]: crate::ContextConfig::counts_to_keep
pub(crate) fn kept_alone_tokens(text: &str) -> Option<u64> {
    decode(text).map(|(_, part)| part.alone() as u64)
}

fn decode(text: &str) -> Option<(Role, CountedText)> {
    let mut fields = text.split(' ');
    let role = match fields.next()? {
        "system" => Role::System,
        "user" => Role::User,
        "assistant" => Role::Assistant,
        _ => return None,
    };
    // At most u32::MAX each, so sums of them cannot overflow: counts are
    // read from a file another process may have written.
    let mut number = || fields.next()?.parse::<u32>().ok().map(|n| n as usize);
    let counts = [number()?, number()?, number()?];
    let clean_start = match number()? {
        0 => false,
        1 => true,
        _ => return None,
    };
    fields
        .next()
        .is_none()
        .then(|| (role, CountedText::from_counts(counts, clean_start)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::TiktokenCounter;

    #[test]
    fn counts_read_back_as_written_and_nothing_else_reads() {
        let counter = TiktokenCounter::new(Encoding::O200kBase).unwrap();
        let part = CountedText::new("<a>\nbody text\n</a>".into(), &counter);
        let text = encode(Role::Assistant, &part);
        let (role, back) = decode(&text).unwrap();
        assert_eq!(role, Role::Assistant);
        assert_eq!(back.counts(), part.counts());
        assert_eq!(back.clean_start, part.clean_start);
        for bad in [
            "",
            "user 1 2 3",
            "user 1 2 3 2",
            "user 1 2 3 1 9",
            "bot 1 2 3 1",
            "user -1 2 3 1",
            "user 18446744073709551615 2 3 1",
        ] {
            assert!(decode(bad).is_none(), "{bad:?} read");
        }
    }
}
