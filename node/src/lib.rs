//! `agent-context` for Node.js: the CLI's JSON in, the CLI's JSON out.
//!
//! Every call goes through `agent_context::command`, the library layer the
//! `agent-context` binary itself calls, so `build(session, options)` gives
//! exactly what `agent-context build --flags` prints. JSON crosses the
//! boundary as text: the package's JavaScript (`index.cjs`) writes the
//! session and the options with `JSON.stringify`, and parses the body
//! once. Errors are napi errors whose message is a JSON payload the
//! JavaScript turns into its error classes; panics are caught.

use agent_context::command::{self, CountOptions, Output};
use napi::bindgen_prelude::AsyncTask;
use napi_derive::napi;

mod builder;
mod compaction;
mod engine;
mod errors;
mod options;
mod outcome;
mod rows;
mod session;
mod task;
mod values;

use errors::{Result, caught, guarded, input_error};
use options::{
    BUILD_KEYS, Call, Takes, build_options, number_read, object_of, parse_options, previous_build,
};
use outcome::Outcome;
use task::{Job, spawn};

/// The options the package's JavaScript reads itself, besides a build's.
const BUILD_ALSO: [&str; 4] = ["previous", "lossyUnicode", "onWarning", "onExplain"];

/// `build`'s options read, and `previous` (a report's JSON text).
fn build_call(options: &str, previous: Option<&str>) -> Result<Call> {
    let map = object_of(options, "options")?;
    let takes = Takes {
        function: "build",
        keys: &BUILD_KEYS,
        also: &BUILD_ALSO,
    };
    let mut call = build_options(&Call::default(), &map, &takes)?;
    call.options.previous = previous_build(previous)?;
    Ok(call)
}

/// `agent-context build` of the session JSON `session`.
fn build_session(
    session: &str,
    options: &str,
    previous: Option<&str>,
    lossy: bool,
) -> Result<Outcome> {
    let call = build_call(options, previous)?;
    call.check_size(session)?;
    guarded(|| {
        let (state, read) = command::read_session(session, call.input, parse_options(lossy))?;
        let printed = command::build(&state, &call.options)?;
        Ok(Outcome::of(printed, call.explain).after(read))
    })
}

/// Builds the prompt of `session` (session JSON) as `agent-context build`
/// does with the flags `options` (a JSON object) names.
#[napi]
pub fn build(
    session: String,
    options: String,
    previous: Option<String>,
    lossy_unicode: bool,
) -> Result<Outcome> {
    caught(|| build_session(&session, &options, previous.as_deref(), lossy_unicode))
}

/// [`build`] on the libuv thread pool: the options are read there too.
#[napi]
pub fn build_async(
    session: String,
    options: String,
    previous: Option<String>,
    lossy_unicode: bool,
) -> AsyncTask<Job> {
    spawn(move || build_session(&session, &options, previous.as_deref(), lossy_unicode))
}

/// The session JSON of AI SDK messages (`UIMessage`s or `ModelMessage`s,
/// or `{system, messages}`), as `--input ai-sdk` reads them, with the
/// warning of the parts no chunk holds.
/// `start` is the place of the first message in the whole history, which
/// the chunk ids follow.
#[napi]
pub fn from_ai_sdk(messages: String, start: u32, lossy_unicode: bool) -> Result<Outcome> {
    caught(|| {
        guarded(|| {
            let options = parse_options(lossy_unicode);
            let history = command::read_ai_sdk(&messages, start as usize, options)?;
            let json = serde_json::to_string(&history.state).unwrap_or_default();
            Ok(Outcome::json(json).after(history.warnings))
        })
    })
}

/// What `count` returns: the number the CLI prints, and its warnings.
#[napi(object)]
pub struct Counted {
    pub tokens: f64,
    pub warnings: Vec<String>,
}

/// The tokens of `text` as `agent-context count` prints them; `options`
/// is `{model, estimateFactor}`.
#[napi]
pub fn count(text: String, options: String) -> Result<Counted> {
    caught(|| {
        let map = object_of(&options, "options")?;
        let mut count = CountOptions::default();
        for (key, value) in &map {
            match key.as_str() {
                _ if value.is_null() => {}
                "model" => count.model = values::text(value, key)?,
                "estimateFactor" => {
                    let factor = number_read(value, key, command::parse_estimate_factor)?;
                    count.estimate_factor = Some(factor);
                }
                _ => {
                    return Err(input_error(format!(
                        "count(): unknown option {key:?}; the options are: model, \
                         estimateFactor, onWarning"
                    )));
                }
            }
        }
        let (tokens, printed) = guarded(|| command::count(&text, &count))?;
        Ok(Counted {
            tokens: tokens as f64,
            warnings: printed.warnings,
        })
    })
}

/// Every output's name, in `--help`'s order.
#[napi]
pub fn outputs() -> Vec<&'static str> {
    Output::ALL.map(Output::as_str).to_vec()
}

/// The version of the addon (the package's).
#[napi]
pub fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}
