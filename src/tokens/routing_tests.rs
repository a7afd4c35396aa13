//! Model routing against tiktoken's own model table (a unit test: routing
//! is not part of the API; `tests/it/routing.rs` builds with the names).
//!
//! tiktoken-rs mirrors tiktoken's `MODEL_TO_ENCODING` and
//! `MODEL_PREFIX_TO_ENCODING`; its `get_tokenizer` is the independent
//! reference. The fixture lists below are tiktoken's names and prefixes, so
//! that a name tiktoken adds or drops shows up here as a difference.

use std::sync::Arc;

use super::{
    Calibration, Encoding, Route, TokenCounter, counter_for_model_calibrated, model_info, route,
};
use tiktoken_rs::tokenizer::{Tokenizer, get_tokenizer};

/// The counter a build without calibration counts `model` with.
fn counter_for_model(model: &str) -> crate::Result<Arc<dyn TokenCounter>> {
    counter_for_model_calibrated(model, &Calibration::new())
}

/// tiktoken's exact model names (`MODEL_TO_ENCODING`).
const TIKTOKEN_NAMES: &[&str] = &[
    "o1",
    "o3",
    "o4-mini",
    "gpt-5",
    "gpt-4.1",
    "gpt-4o",
    "gpt-4",
    "gpt-3.5-turbo",
    "gpt-3.5",
    "gpt-35-turbo",
    "davinci-002",
    "babbage-002",
    "text-embedding-ada-002",
    "text-embedding-3-small",
    "text-embedding-3-large",
    "text-davinci-003",
    "text-davinci-002",
    "text-davinci-001",
    "text-curie-001",
    "text-babbage-001",
    "text-ada-001",
    "davinci",
    "curie",
    "babbage",
    "ada",
    "code-davinci-002",
    "code-davinci-001",
    "code-cushman-002",
    "code-cushman-001",
    "davinci-codex",
    "cushman-codex",
    "text-davinci-edit-001",
    "code-davinci-edit-001",
    "text-similarity-davinci-001",
    "text-similarity-curie-001",
    "text-similarity-babbage-001",
    "text-similarity-ada-001",
    "text-search-davinci-doc-001",
    "text-search-curie-doc-001",
    "text-search-babbage-doc-001",
    "text-search-ada-doc-001",
    "code-search-babbage-code-001",
    "code-search-ada-code-001",
    "gpt2",
    "gpt-2",
];

/// tiktoken's prefixes (`MODEL_PREFIX_TO_ENCODING`), each ending in `-`,
/// plus tiktoken-rs's `codex-mini`.
const TIKTOKEN_PREFIXES: &[&str] = &[
    "o1-",
    "o3-",
    "o4-mini-",
    "gpt-5-",
    "gpt-4.5-",
    "gpt-4.1-",
    "chatgpt-4o-",
    "gpt-4o-",
    "gpt-4-",
    "gpt-3.5-turbo-",
    "gpt-35-turbo-",
    "gpt-oss-",
    "codex-mini-",
];

/// Suffixes that dated and named variants put after a prefix.
const SUFFIXES: &[&str] = &["2024-08-06", "mini", "0613", "preview", "120b", "latest"];

/// Names that start like a family but are no model tiktoken knows.
const LOOK_ALIKES: &[&str] = &[
    "gpt-4.2",
    "gpt-4x",
    "gpt-4o1",
    "gpt-4omni",
    "gpt-4.5",
    "gpt-3",
    "gpt-35",
    "o4",
    "o1x",
    "o100",
    "gpt-oss",
    "gpt-5x",
    "gpt-5.x",
    "claude",
    "davinci-003",
    "text-embedding-4",
    "ada-002x",
    "llama-3",
];

/// What our routing must say for a name tiktoken maps to `tokenizer`:
/// exact with the same encoding, or, for encodings this crate does not
/// count, an estimate naming tiktoken's encoding.
fn expected(tokenizer: Option<Tokenizer>) -> Route {
    match tokenizer {
        Some(Tokenizer::O200kBase) => Route::Exact(Encoding::O200kBase),
        Some(Tokenizer::Cl100kBase) => Route::Exact(Encoding::Cl100kBase),
        Some(Tokenizer::O200kHarmony) => Route::Exact(Encoding::O200kHarmony),
        Some(Tokenizer::P50kBase) => Route::UnsupportedEncoding("p50k_base"),
        Some(Tokenizer::P50kEdit) => Route::UnsupportedEncoding("p50k_edit"),
        Some(Tokenizer::R50kBase) => Route::UnsupportedEncoding("r50k_base"),
        Some(Tokenizer::Gpt2) => Route::UnsupportedEncoding("gpt2"),
        None => Route::Unknown,
    }
}

/// Every name tiktoken lists, and a few variants under each prefix.
fn tiktoken_models() -> Vec<String> {
    let mut models: Vec<String> = TIKTOKEN_NAMES.iter().map(|n| n.to_string()).collect();
    for prefix in TIKTOKEN_PREFIXES {
        models.extend(SUFFIXES.iter().map(|suffix| format!("{prefix}{suffix}")));
    }
    models
}

#[test]
fn every_tiktoken_name_routes_as_tiktoken_does() {
    for model in tiktoken_models() {
        let reference = get_tokenizer(&model);
        assert!(reference.is_some(), "tiktoken-rs no longer lists {model}");
        assert_eq!(route(&model), expected(reference), "{model}");
    }
}

#[test]
fn fine_tunes_and_providers_compose_with_every_name() {
    for model in tiktoken_models() {
        let reference = expected(get_tokenizer(&model));
        for wrapped in [
            format!("ft:{model}:acme::abc123"),
            format!("azure/{model}"),
            format!("azure/ft:{model}:org::id"),
            format!("openrouter/openai/{model}"),
        ] {
            assert_eq!(route(&wrapped), reference, "{wrapped}");
        }
        // tiktoken agrees on the fine-tune form.
        assert_eq!(
            expected(get_tokenizer(&format!("ft:{model}:acme::abc123"))),
            reference,
            "{model}"
        );
    }
}

#[test]
fn look_alikes_are_estimates() {
    for model in LOOK_ALIKES {
        assert_eq!(route(model), Route::Unknown, "{model}");
        assert!(!counter_for_model(model).unwrap().is_exact(), "{model}");
        assert!(model_info(model).is_none(), "{model}");
    }
}

/// Where we are stricter than tiktoken-rs (its `gpt-5` and `codex-mini`
/// prefixes take any ending), we estimate; we never count exactly with an
/// encoding tiktoken does not give the name.
#[test]
fn exact_routes_never_disagree_with_tiktoken() {
    let mut names = tiktoken_models();
    names.extend(LOOK_ALIKES.iter().map(|n| n.to_string()));
    names.extend(
        [
            "gpt-5.1",
            "gpt-5.4-mini",
            "gpt-5-codex",
            "gpt-5_future",
            "codex-minix",
        ]
        .map(String::from),
    );
    for model in &names {
        if let Route::Exact(encoding) = route(model) {
            assert_eq!(
                Route::Exact(encoding),
                expected(get_tokenizer(model)),
                "{model}"
            );
        }
    }
    assert_eq!(route("gpt-5_future"), Route::Unknown);
    assert_eq!(route("gpt-5.4-mini"), Route::Exact(Encoding::O200kBase));
}

#[test]
fn embeddings_and_base_models_count_exactly_with_cl100k() {
    let text = "Embeddings count\tlike any text: 1234567 <|endoftext|> 漢字 🇫🇷";
    let reference = tiktoken_rs::cl100k_base_singleton()
        .encode_ordinary(text)
        .len();
    for model in [
        "text-embedding-3-small",
        "text-embedding-3-large",
        "text-embedding-ada-002",
        "davinci-002",
        "babbage-002",
    ] {
        let counter = counter_for_model(model).unwrap();
        assert!(counter.is_exact(), "{model}");
        assert_eq!(counter.encoding_name(), "cl100k_base", "{model}");
        assert_eq!(counter.count(text), reference, "{model}");
    }
    let window = |model| model_info(model).map(|m| m.context_window);
    assert_eq!(window("text-embedding-3-large"), Some(8_191));
    assert_eq!(window("davinci-002"), Some(16_384));
}

proptest::proptest! {
    /// Whatever follows a known name or prefix, an exact route is the
    /// encoding tiktoken gives that name.
    #[test]
    fn no_name_is_exact_with_another_encoding_than_tiktokens(
        stem in proptest::sample::select(
            TIKTOKEN_NAMES.iter().chain(TIKTOKEN_PREFIXES).copied().collect::<Vec<_>>()
        ),
        tail in "[a-z0-9._:-]{0,6}",
        fine_tune in proptest::bool::ANY,
    ) {
        let name = format!("{stem}{tail}");
        let model = if fine_tune { format!("ft:{name}:org::id") } else { name.clone() };
        if let Route::Exact(encoding) = route(&model) {
            proptest::prop_assert_eq!(
                Route::Exact(encoding),
                expected(get_tokenizer(&model)),
                "{}", model
            );
        }
    }
}
