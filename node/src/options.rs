//! A build's options, one JSON object with camelCase keys named after the
//! CLI's flags (`maxTokens` is `--max-tokens`), read into the command
//! layer's [`BuildOptions`] with the flags' own parsers and defaults.

use agent_context::command::{
    self, BuildOptions, InputFormat, Output, parse_cap, parse_compact_at, parse_content_format,
    parse_escape, parse_estimate_factor, parse_fragment_format, parse_framing, parse_kind,
    parse_threads,
};
use agent_context::{BuildResult, ChunkKind};
use serde_json::{Map, Value};

use crate::errors::{Result, guarded, input_error, option_error};
use crate::values::{count, flag, fraction, text, type_error};

/// A build's options: the library's, and the command's own (`--explain`,
/// `--max-input-bytes`).
#[derive(Debug, Clone, Default)]
pub struct Call {
    pub options: BuildOptions,
    /// `--input`: what the session text holds.
    pub input: InputFormat,
    /// `--explain`: the breakdown of every decision instead of the build's
    /// own warnings.
    pub explain: bool,
    /// `--max-input-bytes`: the most bytes of JSON read.
    pub max_input_bytes: Option<usize>,
}

impl Call {
    /// Refuses JSON text longer than `maxInputBytes`, as the CLI refuses a
    /// larger file.
    pub fn check_size(&self, text: &str) -> Result<()> {
        match self.max_input_bytes {
            Some(limit) if text.len() > limit => Err(input_error(format!(
                "the input is larger than the limit of {limit} bytes; raise it with maxInputBytes"
            ))),
            _ => Ok(()),
        }
    }
}

/// The options of a build, in the order `--help` lists the flags.
pub const BUILD_KEYS: [&str; 20] = [
    "model",
    "maxTokens",
    "reserve",
    "escape",
    "framing",
    "contentFormat",
    "fragmentsFormat",
    "groupFragments",
    "caps",
    "lowWater",
    "contextManagement",
    "compactAt",
    "excludeKinds",
    "estimateFactor",
    "threads",
    "output",
    "explain",
    "cacheControl",
    "maxInputBytes",
    "input",
];

/// Build options a compaction takes no part of: it prints no build.
const NOT_COMPACTION: [&str; 4] = ["output", "explain", "cacheControl", "input"];

/// The build options a compaction takes: all but [`NOT_COMPACTION`].
pub fn compaction_build_keys() -> Vec<&'static str> {
    BUILD_KEYS
        .into_iter()
        .filter(|key| !NOT_COMPACTION.contains(key))
        .collect()
}

/// Which options a call takes, for its errors.
pub struct Takes<'a> {
    /// The function, as an error names it (`build`).
    pub function: &'a str,
    /// The build options it reads here.
    pub keys: &'a [&'a str],
    /// The options the package reads before this one (`previous`,
    /// `onWarning`), listed in the error of an unknown one.
    pub also: &'a [&'a str],
}

impl Takes<'_> {
    fn unknown(&self, key: &str) -> napi::Error {
        let hint = match key {
            "previous" => "; previous is an option of a single build: give it to build()",
            _ => "",
        };
        let mut keys: Vec<&str> = self.also.to_vec();
        keys.extend(self.keys);
        input_error(format!(
            "{}(): unknown option {key:?}; the options are: {}{hint}",
            self.function,
            keys.join(", ")
        ))
    }

    /// Whether the call takes `key`, or the option it is the flag's own
    /// name for: `--cap` (repeatable) is `caps`, `--exclude-kind` is
    /// `excludeKinds`, `--no-cache-control` the negation of `cacheControl`.
    fn allows(&self, key: &str) -> bool {
        let option = match key {
            "cap" => "caps",
            "excludeKind" => "excludeKinds",
            "noCacheControl" => "cacheControl",
            other => other,
        };
        self.keys.contains(&option)
    }
}

/// The JSON object of `text`, the options the package's JavaScript wrote.
pub fn object_of(text: &str, what: &str) -> Result<Map<String, Value>> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(type_error(what, "an object", &other)),
        Err(error) => Err(input_error(format!("{what} is not JSON: {error}"))),
    }
}

/// `base` with the options of `map` applied; an option `takes` does not
/// list is an `InputError` naming it, as is a value of the wrong type.
pub fn build_options(base: &Call, map: &Map<String, Value>, takes: &Takes<'_>) -> Result<Call> {
    let mut call = base.clone();
    for (key, value) in map {
        if !takes.allows(key) {
            return Err(takes.unknown(key));
        }
        match key.as_str() {
            "explain" => call.explain = flag(value, key)?,
            "input" if value.is_null() => call.input = InputFormat::Session,
            "input" => call.input = named(value, key, InputFormat::from_name)?,
            "noCacheControl" => call.options.cache_control = !flag(value, key)?,
            "maxInputBytes" => {
                call.max_input_bytes = count(value, key)?;
                if call.max_input_bytes == Some(0) {
                    // As the CLI refuses `--max-input-bytes 0`.
                    return Err(option_error(
                        key,
                        "expected a size of at least one byte; found 0",
                    ));
                }
            }
            // null is the flag left out: the default.
            _ if value.is_null() => set_default(&mut call.options, key),
            _ => set(&mut call.options, key, value)?,
        }
    }
    Ok(call)
}

fn set(options: &mut BuildOptions, key: &str, value: &Value) -> Result<()> {
    match key {
        "model" => options.model = text(value, key)?,
        "maxTokens" => options.max_tokens = count(value, key)?,
        "reserve" => options.reserve_output = count(value, key)?,
        "escape" => options.escape = named(value, key, parse_escape)?,
        "framing" => options.framing = named(value, key, parse_framing)?,
        "contentFormat" => options.content_format = named(value, key, parse_content_format)?,
        "fragmentsFormat" => options.fragments_format = named(value, key, parse_fragment_format)?,
        "groupFragments" => options.group_fragments = flag(value, key)?,
        "caps" | "cap" => options.caps = caps(value)?,
        "lowWater" => options.low_water = fraction(value, key)?,
        "contextManagement" => {
            let text = context_management(value)?;
            options.context_management = Some(guarded(|| command::read_context_management(&text))?);
        }
        "compactAt" => options.compact_at = Some(number_read(value, key, parse_compact_at)?),
        "excludeKinds" | "excludeKind" => options.exclude_kinds = kinds(value)?,
        "estimateFactor" => {
            options.estimate_factor = Some(number_read(value, key, parse_estimate_factor)?);
        }
        "threads" => {
            let Value::Number(n) = value else {
                return Err(type_error(key, "an integer", value));
            };
            options.threads =
                Some(parse_threads(&n.to_string()).map_err(|m| option_error(key, m))?);
        }
        "output" => options.output = named(value, key, Output::from_name)?,
        "cacheControl" => options.cache_control = flag(value, key)?,
        // `build_options` lets through only the keys above.
        _ => {}
    }
    Ok(())
}

/// Sets `key` back to its default (the option given as null).
fn set_default(options: &mut BuildOptions, key: &str) {
    let default = BuildOptions::default();
    match key {
        "model" => options.model = default.model,
        "maxTokens" => options.max_tokens = None,
        "reserve" => options.reserve_output = None,
        "escape" => options.escape = default.escape,
        "framing" => options.framing = default.framing,
        "contentFormat" => options.content_format = default.content_format,
        "fragmentsFormat" => options.fragments_format = default.fragments_format,
        "groupFragments" => options.group_fragments = default.group_fragments,
        "caps" | "cap" => options.caps = default.caps,
        "lowWater" => options.low_water = default.low_water,
        "contextManagement" => options.context_management = None,
        "compactAt" => options.compact_at = None,
        "excludeKinds" | "excludeKind" => options.exclude_kinds = default.exclude_kinds,
        "estimateFactor" => options.estimate_factor = None,
        "threads" => options.threads = None,
        "output" => options.output = default.output,
        "cacheControl" => options.cache_control = default.cache_control,
        _ => {}
    }
}

/// A name (`"xml"`) read by the flag's parser.
fn named<T>(
    value: &Value,
    key: &str,
    parse: impl Fn(&str) -> std::result::Result<T, String>,
) -> Result<T> {
    let name = text(value, key)?;
    parse(&name).map_err(|m| option_error(key, m))
}

/// A number (by its digits) or a string, read as the flag reads its text:
/// `compactAt` 100000 is tokens and 0.75 a fraction, `"1.0"` a fraction.
pub fn number_read<T>(
    value: &Value,
    key: &str,
    parse: impl Fn(&str) -> std::result::Result<T, String>,
) -> Result<T> {
    let text = match value {
        Value::Number(n) => n.to_string(),
        Value::String(text) => text.clone(),
        other => return Err(type_error(key, "a number or its text", other)),
    };
    parse(&text).map_err(|m| option_error(key, m))
}

/// `{"tool_result": 2000, "tool:bash": null}`, or `["tool_result=2000", …]`.
fn caps(value: &Value) -> Result<Vec<(String, Option<usize>)>> {
    let key = "caps";
    let read = |text: &str| parse_cap(text).map_err(|m| option_error(key, m));
    match value {
        Value::Object(map) => map
            .iter()
            .map(|(name, cap)| {
                let cap = match cap {
                    Value::Null => "none".to_owned(),
                    Value::Number(n) => n.to_string(),
                    Value::String(text) => text.clone(),
                    other => {
                        let what = format!("caps[{name:?}]");
                        return Err(type_error(&what, "a number of tokens or null", other));
                    }
                };
                read(&format!("{name}={cap}"))
            })
            .collect(),
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::String(text) => read(text),
                other => Err(type_error("an item of caps", "a string \"NAME=N\"", other)),
            })
            .collect(),
        other => Err(type_error(
            key,
            "an object {name: tokens} or an array of \"NAME=N\"",
            other,
        )),
    }
}

/// A kind's name, or an array of them.
fn kinds(value: &Value) -> Result<Vec<ChunkKind>> {
    let key = "excludeKinds";
    let read = |name: &str| parse_kind(name).map_err(|m| option_error(key, m));
    match value {
        Value::String(name) => Ok(vec![read(name)?]),
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::String(name) => read(name),
                other => Err(type_error(
                    "an item of excludeKinds",
                    "a kind's name",
                    other,
                )),
            })
            .collect(),
        other => Err(type_error(key, "a kind's name or an array of them", other)),
    }
}

/// `contextManagement`: Anthropic's object, or a string (its JSON, or the
/// path of a file holding it, as the flag takes).
fn context_management(value: &Value) -> Result<String> {
    match value {
        Value::Object(_) => Ok(value.to_string()),
        Value::String(text) => Ok(text.clone()),
        other => Err(type_error(
            "contextManagement",
            "an object, its JSON text or a file path",
            other,
        )),
    }
}

/// `previous` (`--previous REPORT`): the JSON text of the report of the
/// previous build of the same session, read as the CLI reads its file.
pub fn previous_build(text: Option<&str>) -> Result<Option<BuildResult>> {
    text.map(|text| guarded(|| BuildResult::from_report(text, "previous")))
        .transpose()
}

/// `lossyUnicode`'s reading of JSON input.
pub fn parse_options(lossy_unicode: bool) -> agent_context::ParseOptions {
    agent_context::ParseOptions::new().lossy_unicode(lossy_unicode)
}
