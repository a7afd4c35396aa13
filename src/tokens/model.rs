//! Which encoding and context window a model name means.

/// A tiktoken encoding we count exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// GPT-4o, GPT-4.1, GPT-5, o1/o3/o4 models.
    O200kBase,
    /// GPT-4 and GPT-3.5-turbo.
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
pub struct ModelInfo {
    /// The model family prefix that matched (e.g. `gpt-4o`).
    pub family: &'static str,
    /// The encoding to count with; `None` means counts are estimates.
    pub encoding: Option<Encoding>,
    /// The model's context window in tokens.
    pub context_window: usize,
}

/// Known model families: name prefix, encoding, context window. The longest
/// matching prefix wins, so `gpt-4o` beats `gpt-4` and `gpt-4-32k` beats `gpt-4`.
const MODELS: &[(&str, Option<Encoding>, usize)] = &[
    ("gpt-5", Some(Encoding::O200kBase), 400_000),
    ("gpt-4.1", Some(Encoding::O200kBase), 1_047_576),
    ("gpt-4.5", Some(Encoding::O200kBase), 128_000),
    ("gpt-4o", Some(Encoding::O200kBase), 128_000),
    ("chatgpt-4o", Some(Encoding::O200kBase), 128_000),
    ("o1", Some(Encoding::O200kBase), 200_000),
    ("o1-mini", Some(Encoding::O200kBase), 128_000),
    ("o1-preview", Some(Encoding::O200kBase), 128_000),
    ("o3", Some(Encoding::O200kBase), 200_000),
    ("o4", Some(Encoding::O200kBase), 200_000),
    ("codex-mini", Some(Encoding::O200kBase), 200_000),
    ("gpt-oss", Some(Encoding::O200kHarmony), 131_072),
    ("gpt-4", Some(Encoding::Cl100kBase), 8_192),
    ("gpt-4-32k", Some(Encoding::Cl100kBase), 32_768),
    ("gpt-4-turbo", Some(Encoding::Cl100kBase), 128_000),
    ("gpt-4-1106", Some(Encoding::Cl100kBase), 128_000),
    ("gpt-4-0125", Some(Encoding::Cl100kBase), 128_000),
    ("gpt-3.5-turbo", Some(Encoding::Cl100kBase), 16_385),
    ("gpt-35-turbo", Some(Encoding::Cl100kBase), 16_385),
    // Known windows, but no public tokenizer: counts are estimates.
    ("claude", None, 200_000),
];

/// Looks a model up by name (longest known prefix; a `ft:` fine-tune prefix
/// and a `provider/` prefix are looked through).
pub fn model_info(model: &str) -> Option<ModelInfo> {
    let name = model.strip_prefix("ft:").unwrap_or(model);
    let name = name.rsplit('/').next().unwrap_or(name).to_ascii_lowercase();
    MODELS
        .iter()
        .filter(|(prefix, _, _)| name.starts_with(prefix) && prefix_ends_cleanly(&name, prefix))
        .max_by_key(|(prefix, _, _)| prefix.len())
        .map(|&(family, encoding, context_window)| ModelInfo {
            family,
            encoding,
            context_window,
        })
}

/// `o1` must match `o1-2024-12-17` but not `o100`; `gpt-4` must not match `gpt-4o`
/// (that has its own entry, which is longer and wins anyway).
fn prefix_ends_cleanly(name: &str, prefix: &str) -> bool {
    match name[prefix.len()..].chars().next() {
        None => true,
        Some(c) => !c.is_ascii_digit() || prefix.ends_with(|p: char| !p.is_ascii_alphanumeric()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_follow_the_design_table() {
        for (model, encoding) in [
            ("gpt-4o", Encoding::O200kBase),
            ("gpt-4o-mini-2024-07-18", Encoding::O200kBase),
            ("gpt-4.1", Encoding::O200kBase),
            ("gpt-5", Encoding::O200kBase),
            ("o3", Encoding::O200kBase),
            ("gpt-4", Encoding::Cl100kBase),
            ("gpt-4-0613", Encoding::Cl100kBase),
            ("gpt-3.5-turbo", Encoding::Cl100kBase),
            ("gpt-oss-120b", Encoding::O200kHarmony),
            ("openai/gpt-4o", Encoding::O200kBase),
            ("ft:gpt-4o:acme::abc", Encoding::O200kBase),
        ] {
            assert_eq!(
                model_info(model).and_then(|m| m.encoding),
                Some(encoding),
                "{model}"
            );
        }
    }

    #[test]
    fn windows_and_unknowns() {
        assert_eq!(
            model_info("gpt-4-32k").map(|m| m.context_window),
            Some(32_768)
        );
        assert_eq!(model_info("gpt-4").map(|m| m.context_window), Some(8_192));
        assert_eq!(
            model_info("gpt-4.1-mini").map(|m| m.context_window),
            Some(1_047_576)
        );
        assert_eq!(model_info("claude-sonnet-4").and_then(|m| m.encoding), None);
        assert!(model_info("o100").is_none());
        assert!(model_info("llama-3").is_none());
    }
}
