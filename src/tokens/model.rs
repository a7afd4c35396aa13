//! Which encoding and context window a model name means.
//!
//! The routing follows tiktoken's own model table: a name counts exactly
//! when it is one of tiktoken's model names, or starts with one of its
//! prefixes, all of which end in `-` (`gpt-4o-2024-08-06` under `gpt-4o-`).
//! A name that merely starts like a family (`gpt-4.2`, `gpt-4x`, `gpt-4o1`)
//! is unknown, and its counts are estimates.

use std::fmt;

/// A tiktoken encoding we count exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// GPT-4o, GPT-4.1, GPT-5, o1/o3/o4 models.
    O200kBase,
    /// GPT-4, GPT-3.5-turbo, the `-002` base models and OpenAI's embeddings.
    Cl100kBase,
    /// gpt-oss models. Ordinary text encodes exactly as `o200k_base` (same
    /// ranks and pattern; only the special tokens differ), so it shares those
    /// tables.
    O200kHarmony,
}

impl Encoding {
    /// The encoding's tiktoken name.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::O200kBase => "o200k_base",
            Encoding::Cl100kBase => "cl100k_base",
            Encoding::O200kHarmony => "o200k_harmony",
        }
    }

    /// Parses a tiktoken encoding name.
    pub fn from_name(name: &str) -> Option<Encoding> {
        [
            Encoding::O200kBase,
            Encoding::Cl100kBase,
            Encoding::O200kHarmony,
        ]
        .into_iter()
        .find(|e| e.name() == name)
    }
}

/// What we know about a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ModelInfo {
    /// The table entry that matched: a model name (`gpt-4o`) or a prefix
    /// ending in `-` (`gpt-4o-`).
    pub family: &'static str,
    /// The encoding to count with; `None` means counts are estimates.
    pub encoding: Option<Encoding>,
    /// The model's context window in tokens.
    pub context_window: usize,
}

/// How a model name's tokens are counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum Route {
    /// Exactly, with this encoding.
    Exact(Encoding),
    /// Estimated: the model's tokenizer is not public (Claude).
    NoPublicTokenizer,
    /// Estimated: tiktoken maps the model to an encoding this crate does not
    /// count (`r50k_base`, `p50k_base`, `p50k_edit`, `gpt2`: retired
    /// completion, code and edit models such as `text-davinci-003`).
    UnsupportedEncoding(&'static str),
    /// Estimated: the name is not in the table.
    Unknown,
}

impl fmt::Display for Route {
    /// What a model routed this way is, for warnings: "(model X) has no
    /// public tokenizer".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Route::Exact(encoding) => write!(f, "is counted exactly with {}", encoding.name()),
            Route::NoPublicTokenizer => f.write_str("has no public tokenizer"),
            Route::UnsupportedEncoding(encoding) => write!(
                f,
                "uses tiktoken's {encoding}, which this crate does not count (a retired model)"
            ),
            Route::Unknown => f.write_str("is not in the model table"),
        }
    }
}

/// How a table entry matches a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Match {
    /// The whole name.
    Name,
    /// A prefix followed by at least one more character. Prefixes end in
    /// `-`, or in `.` for point releases, which must go on with a digit.
    Prefix,
}

/// What an entry routes to, with the context window where it is known.
#[derive(Debug, Clone, Copy)]
struct Entry {
    pattern: &'static str,
    matching: Match,
    route: Route,
    window: usize,
}

const fn name(pattern: &'static str, encoding: Encoding, window: usize) -> Entry {
    Entry {
        pattern,
        matching: Match::Name,
        route: Route::Exact(encoding),
        window,
    }
}

const fn prefix(pattern: &'static str, encoding: Encoding, window: usize) -> Entry {
    Entry {
        pattern,
        matching: Match::Prefix,
        route: Route::Exact(encoding),
        window,
    }
}

const fn retired(pattern: &'static str, encoding: &'static str) -> Entry {
    Entry {
        pattern,
        matching: Match::Name,
        route: Route::UnsupportedEncoding(encoding),
        window: 0,
    }
}

use Encoding::{Cl100kBase as CL100K, O200kBase as O200K, O200kHarmony as HARMONY};

/// The model table. The longest matching entry wins; entries longer than
/// tiktoken's own (`gpt-4-32k-` under `gpt-4-`) only refine the window.
/// Windows are OpenAI's documented input limits (embeddings: 8,191).
const MODELS: &[Entry] = &[
    // tiktoken's names and prefixes, o200k_base.
    name("o1", O200K, 200_000),
    prefix("o1-", O200K, 200_000),
    name("o3", O200K, 200_000),
    prefix("o3-", O200K, 200_000),
    name("o4-mini", O200K, 200_000),
    prefix("o4-mini-", O200K, 200_000),
    name("gpt-5", O200K, 400_000),
    prefix("gpt-5-", O200K, 400_000),
    prefix("gpt-5.", O200K, 400_000),
    prefix("gpt-4.5-", O200K, 128_000),
    name("gpt-4.1", O200K, 1_047_576),
    prefix("gpt-4.1-", O200K, 1_047_576),
    prefix("chatgpt-4o-", O200K, 128_000),
    name("gpt-4o", O200K, 128_000),
    prefix("gpt-4o-", O200K, 128_000),
    name("codex-mini", O200K, 200_000),
    prefix("codex-mini-", O200K, 200_000),
    prefix("gpt-oss-", HARMONY, 131_072),
    // cl100k_base.
    name("gpt-4", CL100K, 8_192),
    prefix("gpt-4-", CL100K, 8_192),
    name("gpt-3.5-turbo", CL100K, 16_385),
    prefix("gpt-3.5-turbo-", CL100K, 16_385),
    name("gpt-3.5", CL100K, 16_385),
    name("gpt-35-turbo", CL100K, 16_385),
    prefix("gpt-35-turbo-", CL100K, 16_385),
    name("davinci-002", CL100K, 16_384),
    name("babbage-002", CL100K, 16_384),
    name("text-embedding-ada-002", CL100K, 8_191),
    name("text-embedding-3-small", CL100K, 8_191),
    name("text-embedding-3-large", CL100K, 8_191),
    // Windows of members of the families above.
    name("o1-mini", O200K, 128_000),
    prefix("o1-mini-", O200K, 128_000),
    name("o1-preview", O200K, 128_000),
    prefix("o1-preview-", O200K, 128_000),
    name("gpt-5-chat-latest", O200K, 128_000),
    name("gpt-4-32k", CL100K, 32_768),
    prefix("gpt-4-32k-", CL100K, 32_768),
    name("gpt-4-turbo", CL100K, 128_000),
    prefix("gpt-4-turbo-", CL100K, 128_000),
    prefix("gpt-4-1106-", CL100K, 128_000),
    prefix("gpt-4-0125-", CL100K, 128_000),
    name("gpt-4-vision-preview", CL100K, 128_000),
    name("gpt-3.5-turbo-instruct", CL100K, 4_096),
    name("gpt-3.5-turbo-0613", CL100K, 4_096),
    name("gpt-3.5-turbo-0301", CL100K, 4_096),
    // No public tokenizer: known windows, estimated counts.
    Entry {
        pattern: "claude-",
        matching: Match::Prefix,
        route: Route::NoPublicTokenizer,
        window: 200_000,
    },
    // Retired models tiktoken maps to encodings we do not count.
    retired("text-davinci-003", "p50k_base"),
    retired("text-davinci-002", "p50k_base"),
    retired("text-davinci-001", "r50k_base"),
    retired("text-curie-001", "r50k_base"),
    retired("text-babbage-001", "r50k_base"),
    retired("text-ada-001", "r50k_base"),
    retired("davinci", "r50k_base"),
    retired("curie", "r50k_base"),
    retired("babbage", "r50k_base"),
    retired("ada", "r50k_base"),
    retired("code-davinci-002", "p50k_base"),
    retired("code-davinci-001", "p50k_base"),
    retired("code-cushman-002", "p50k_base"),
    retired("code-cushman-001", "p50k_base"),
    retired("davinci-codex", "p50k_base"),
    retired("cushman-codex", "p50k_base"),
    retired("text-davinci-edit-001", "p50k_edit"),
    retired("code-davinci-edit-001", "p50k_edit"),
    retired("text-similarity-davinci-001", "r50k_base"),
    retired("text-similarity-curie-001", "r50k_base"),
    retired("text-similarity-babbage-001", "r50k_base"),
    retired("text-similarity-ada-001", "r50k_base"),
    retired("text-search-davinci-doc-001", "r50k_base"),
    retired("text-search-curie-doc-001", "r50k_base"),
    retired("text-search-babbage-doc-001", "r50k_base"),
    retired("text-search-ada-doc-001", "r50k_base"),
    retired("code-search-babbage-code-001", "r50k_base"),
    retired("code-search-ada-code-001", "r50k_base"),
    retired("gpt2", "gpt2"),
    retired("gpt-2", "gpt2"),
];

impl Entry {
    fn matches(&self, name: &str) -> bool {
        match self.matching {
            Match::Name => name == self.pattern,
            Match::Prefix => name.strip_prefix(self.pattern).is_some_and(|rest| {
                // `gpt-5.` is for point releases: `gpt-5.1`, not `gpt-5.x`.
                let needs_digit = self.pattern.ends_with('.');
                rest.chars()
                    .next()
                    .is_some_and(|c| !needs_digit || c.is_ascii_digit())
            }),
        }
    }
}

/// The model name with `provider/` prefixes (`azure/`, `openai/`) and a
/// fine-tune's `ft:…:org::id` wrapping taken off, lowercased:
/// `azure/ft:gpt-4o-mini:org::id` is `gpt-4o-mini`.
pub(crate) fn base_model_name(model: &str) -> String {
    let mut name = model;
    while !name.starts_with("ft:")
        && let Some((_, rest)) = name.split_once('/')
    {
        name = rest;
    }
    if let Some(fine_tuned) = name.strip_prefix("ft:") {
        name = fine_tuned.split(':').next().unwrap_or(fine_tuned);
    }
    name.to_ascii_lowercase()
}

fn entry_for(model: &str) -> Option<&'static Entry> {
    let name = base_model_name(model);
    MODELS
        .iter()
        .filter(|entry| entry.matches(&name))
        .max_by_key(|entry| entry.pattern.len())
}

/// How `model` is counted: exact for tiktoken's names and prefixes (after
/// taking off `provider/` and `ft:` wrappings; case-insensitive), an
/// estimate for anything else.
pub(crate) fn route(model: &str) -> Route {
    entry_for(model).map_or(Route::Unknown, |entry| entry.route)
}

/// The encoding and context window of a known model; `None` for an unknown
/// name and for retired models (whose windows the table does not keep).
pub(crate) fn model_info(model: &str) -> Option<ModelInfo> {
    let entry = entry_for(model)?;
    let encoding = match entry.route {
        Route::Exact(encoding) => Some(encoding),
        Route::NoPublicTokenizer => None,
        Route::UnsupportedEncoding(_) | Route::Unknown => return None,
    };
    Some(ModelInfo {
        family: entry.pattern,
        encoding,
        context_window: entry.window,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrappings_come_off() {
        for (model, base) in [
            ("gpt-4o", "gpt-4o"),
            ("GPT-4o", "gpt-4o"),
            ("openai/gpt-4o", "gpt-4o"),
            ("ft:gpt-4o:acme::abc", "gpt-4o"),
            ("azure/ft:gpt-4o-mini:org::id", "gpt-4o-mini"),
            ("a/b/ft:gpt-4:org:x/y:id", "gpt-4"),
        ] {
            assert_eq!(base_model_name(model), base, "{model}");
        }
    }

    #[test]
    fn windows_follow_the_longest_entry() {
        let window = |model| model_info(model).map(|m| m.context_window);
        assert_eq!(window("gpt-4-32k"), Some(32_768));
        assert_eq!(window("gpt-4-32k-0314"), Some(32_768));
        assert_eq!(window("gpt-4"), Some(8_192));
        assert_eq!(window("gpt-4-0613"), Some(8_192));
        assert_eq!(window("gpt-4-turbo-2024-04-09"), Some(128_000));
        assert_eq!(window("gpt-4.1-mini"), Some(1_047_576));
        assert_eq!(window("o1-mini-2024-09-12"), Some(128_000));
        assert_eq!(window("text-embedding-3-small"), Some(8_191));
        assert_eq!(window("claude-sonnet-4"), Some(200_000));
        assert_eq!(window("text-davinci-003"), None);
    }

    #[test]
    fn point_releases_need_a_digit() {
        assert_eq!(route("gpt-5.1"), Route::Exact(Encoding::O200kBase));
        assert_eq!(route("gpt-5.2-codex"), Route::Exact(Encoding::O200kBase));
        assert_eq!(route("gpt-5.x"), Route::Unknown);
        assert_eq!(route("gpt-5."), Route::Unknown);
    }
}
