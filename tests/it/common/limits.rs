//! The limits and names the crate documents, written out as the tests hold
//! it to them (the crate keeps its own constants private).

/// The deepest a fragment tree nests (docs/fragments.md).
pub const FRAGMENT_MAX_DEPTH: usize = 64;

/// The key a fragment's value that is no object sits under.
pub const ROOT_KEY: &str = "value";

/// The lowest cap on a chunk: a cap below it is raised to it (docs/cli.md).
pub const MIN_CAP: usize = 64;

/// The most cache breakpoints Anthropic accepts in one request.
pub const MAX_BREAKPOINTS: usize = 4;

/// How many blocks before a breakpoint Anthropic looks back for an earlier
/// cache entry.
pub const LOOKBACK_BLOCKS: usize = 20;

/// The fewest tokens a prefix needs for `model` to cache it, as Anthropic
/// documents: 4096 for Claude Opus 4.5 and Haiku 4.5, 2048 for the Haiku 3
/// and 3.5 models, 1024 for the others.
pub fn min_cacheable_tokens(model: &str) -> usize {
    if ["claude-opus-4-5", "claude-haiku-4-5"]
        .iter()
        .any(|p| model.starts_with(p))
    {
        4096
    } else if ["claude-3-haiku", "claude-3-5-haiku", "claude-haiku-3"]
        .iter()
        .any(|p| model.starts_with(p))
    {
        2048
    } else {
        1024
    }
}

/// The deepest nesting of arrays and objects a JSON input may have.
pub const MAX_JSON_DEPTH: usize = 256;

/// The branch every chat starts with.
pub const MAIN_BRANCH: &str = "main";
