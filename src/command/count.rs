//! `count`: the tokens of raw text.

use serde_json::json;

use crate::settings::builder::DEFAULT_MODEL;
use crate::tokens::{
    Calibration, EstimateFactor, count_on_threads, counter_for_model_calibrated, estimate_warning,
};
use crate::{ErrorKind, Result};

use super::options::{default_threads, unused_factor_warning};
use super::{Body, Printed};

/// What `count` is asked for: its flags, under their names.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CountOptions {
    /// `--model`: the model whose encoding counts.
    pub model: String,
    /// `--estimate-factor`: the factor of estimates.
    pub estimate_factor: Option<EstimateFactor>,
    /// `--json`: an object (`model`, `encoding`, `tokens`, `exact`) instead
    /// of the bare number.
    pub json: bool,
    /// `--threads`: the most threads a long text is counted on (`None`: the
    /// machine's parallelism, at most 4). Exact counts are cut at clean
    /// cuts into shares of at least 512 KB, so the count is the same on any
    /// number; estimates are counted on one.
    pub threads: Option<usize>,
}

impl Default for CountOptions {
    fn default() -> Self {
        CountOptions {
            model: DEFAULT_MODEL.to_owned(),
            estimate_factor: None,
            json: false,
            threads: None,
        }
    }
}

/// The tokens of `text` as `count` reports them, with its warnings (an
/// estimated model, a factor that changes nothing).
///
/// # Errors
///
/// An empty model name.
pub fn count(text: &str, options: &CountOptions) -> Result<(usize, Printed)> {
    let model = &options.model;
    if model.is_empty() {
        return Err(ErrorKind::Option {
            option: "model".into(),
            message: format!("the model name is empty; name one, e.g. {DEFAULT_MODEL:?}"),
        }
        .into());
    }
    let calibration = options
        .estimate_factor
        .map_or_else(Calibration::new, Calibration::with_floor);
    let counter = counter_for_model_calibrated(model, &calibration)?;
    let warnings: Vec<String> = estimate_warning(model, counter.as_ref())
        .into_iter()
        .chain(unused_factor_warning(
            options.estimate_factor,
            model,
            counter.is_exact(),
        ))
        .collect();
    let threads = || options.threads.unwrap_or_else(default_threads);
    let tokens = count_on_threads(counter.as_ref(), text, threads);
    let body = if options.json {
        Body::Json(json!({
            "model": model,
            "encoding": counter.encoding_name(),
            "tokens": tokens,
            "exact": counter.is_exact(),
        }))
    } else {
        Body::Text(format!("{tokens}\n"))
    };
    let printed = Printed {
        body,
        warnings,
        build_warnings: 0,
        result: None,
        html: None,
    };
    Ok((tokens, printed))
}
