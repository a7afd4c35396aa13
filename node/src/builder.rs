//! `ContextBuilder`: build settings read and compiled once, for many
//! builds and sessions.

use std::sync::Arc;

use agent_context::ContextConfig;
use agent_context::budget::CompactAt;
use agent_context::command::{self, BuildOptions, Output};
use napi::bindgen_prelude::AsyncTask;
use napi_derive::napi;
use serde_json::{Map, Value, json};

use crate::errors::{Result, caught, guarded, option_error};
use crate::options::{
    BUILD_KEYS, Call, Takes, build_options, object_of, parse_options, previous_build,
};
use crate::outcome::Outcome;
use crate::task::{Job, spawn};

/// The settings of a builder: the options of `build`, checked and
/// compiled once (`command::build_compiled` builds with them).
#[napi]
pub struct NativeBuilder {
    pub(crate) call: Call,
    config: Arc<ContextConfig>,
}

/// The options the package's JavaScript keeps itself.
const BUILDER_ALSO: [&str; 2] = ["onWarning", "onExplain"];

#[napi]
impl NativeBuilder {
    /// A builder of the settings `options` (a JSON object) names, compiled
    /// (and so checked) here, as the CLI checks its flags before reading
    /// the input.
    #[napi(constructor)]
    pub fn new(options: String) -> Result<Self> {
        caught(|| NativeBuilder::of(&Call::default(), &options, "ContextBuilder"))
    }

    /// A copy of this builder with the options of `options` changed.
    #[napi]
    pub fn with_options(&self, options: String) -> Result<NativeBuilder> {
        caught(|| NativeBuilder::of(&self.call, &options, "withOptions"))
    }

    /// Builds `session` with these settings, as `build` does; `output`
    /// overrides the builder's, `previous` is a report's JSON text.
    #[napi]
    pub fn build(
        &self,
        session: String,
        output: Option<String>,
        previous: Option<String>,
        lossy_unicode: bool,
    ) -> Result<Outcome> {
        let job = self.job(output, previous, lossy_unicode);
        caught(|| job.run(&session))
    }

    /// [`build`](Self::build) on the libuv thread pool.
    #[napi]
    pub fn build_async(
        &self,
        session: String,
        output: Option<String>,
        previous: Option<String>,
        lossy_unicode: bool,
    ) -> AsyncTask<Job> {
        let job = self.job(output, previous, lossy_unicode);
        spawn(move || job.run(&session))
    }

    /// The settings as a JSON object of the options, each as a value the
    /// option takes back, in the order `--help` lists the flags.
    #[napi]
    pub fn options(&self) -> String {
        let mut map = Map::new();
        for key in BUILD_KEYS {
            map.insert(key.to_owned(), option_value(&self.call, key));
        }
        Value::Object(map).to_string()
    }
}

impl NativeBuilder {
    fn of(base: &Call, options: &str, function: &str) -> Result<Self> {
        let map = object_of(options, "options")?;
        let takes = Takes {
            function,
            keys: &BUILD_KEYS,
            also: &BUILDER_ALSO,
        };
        let call = build_options(base, &map, &takes)?;
        let config = guarded(|| call.options.builder()?.compile())?;
        Ok(NativeBuilder {
            call,
            config: Arc::new(config),
        })
    }

    fn job(&self, output: Option<String>, previous: Option<String>, lossy: bool) -> BuilderJob {
        BuilderJob {
            call: self.call.clone(),
            config: Arc::clone(&self.config),
            output,
            previous,
            lossy,
        }
    }
}

/// One build of a builder, ready to run here or on a pool thread.
struct BuilderJob {
    call: Call,
    config: Arc<ContextConfig>,
    output: Option<String>,
    previous: Option<String>,
    lossy: bool,
}

impl BuilderJob {
    fn run(self, session: &str) -> Result<Outcome> {
        let mut options = with_output(&self.call.options, self.output.as_deref())?;
        options.previous = previous_build(self.previous.as_deref())?;
        // Another output may change the settings (Anthropic's reserve,
        // native tool calls), and a previous build is the builder's to
        // keep: those compile for this build.
        let same = options.output == self.call.options.output && options.previous.is_none();
        self.call.check_size(session)?;
        let explain = self.call.explain;
        guarded(|| {
            let (state, read) =
                command::read_session(session, self.call.input, parse_options(self.lossy))?;
            let printed = match same {
                true => command::build_compiled(&state, &self.config, &options)?,
                false => command::build(&state, &options)?,
            };
            Ok(Outcome::of(printed, explain).after(read))
        })
    }
}

/// `options` with `output` (a name) in place of its own.
pub fn with_output(options: &BuildOptions, output: Option<&str>) -> Result<BuildOptions> {
    let mut options = options.clone();
    if let Some(name) = output {
        options.output = Output::from_name(name).map_err(|m| option_error("output", m))?;
    }
    Ok(options)
}

/// The value of option `key` in `call`, as the option takes it back: a
/// whole fraction for `compactAt` as its text (`"1.0"`), since the number
/// 1 would read as one token.
fn option_value(call: &Call, key: &str) -> Value {
    let o = &call.options;
    match key {
        "model" => json!(o.model),
        "maxTokens" => json!(o.max_tokens),
        "reserve" => json!(o.reserve_output),
        "escape" => json!(o.escape.as_str()),
        "framing" => json!(o.framing.as_str()),
        "contentFormat" => json!(o.content_format.name()),
        "fragmentsFormat" => json!(o.fragments_format.as_str()),
        "groupFragments" => json!(o.group_fragments),
        "caps" => Value::Object(o.caps.iter().map(|(n, t)| (n.clone(), json!(t))).collect()),
        "lowWater" => json!(o.low_water),
        "contextManagement" => o
            .context_management
            .as_ref()
            .and_then(|m| serde_json::to_value(m).ok())
            .unwrap_or(Value::Null),
        "compactAt" => match o.compact_at {
            Some(CompactAt::Tokens(tokens)) => json!(tokens),
            Some(CompactAt::Fraction(f)) if f.fract() == 0.0 => json!(format!("{f:.1}")),
            Some(CompactAt::Fraction(f)) => json!(f),
            None => Value::Null,
        },
        "excludeKinds" => json!(
            o.exclude_kinds
                .iter()
                .map(|k| k.as_str())
                .collect::<Vec<_>>()
        ),
        "estimateFactor" => o
            .estimate_factor
            .and_then(|f| serde_json::from_str(&f.to_string()).ok())
            .unwrap_or(Value::Null),
        "threads" => json!(o.threads),
        "output" => json!(o.output.as_str()),
        "explain" => json!(call.explain),
        "cacheControl" => json!(o.cache_control),
        "maxInputBytes" => json!(call.max_input_bytes),
        "input" => json!(call.input.as_str()),
        _ => Value::Null,
    }
}
