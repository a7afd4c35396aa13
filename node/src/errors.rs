//! The library's errors (and panics) as napi errors whose message is a
//! small JSON payload, which the package's JavaScript turns into its error
//! classes: `{"class", "message", "exitCode"}`, and for a budget too small
//! `required`, `available`, `maxTokens` and `reserve`.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};

use agent_context::ErrorKind;
use agent_context::command::{ErrorClass, error_class, exit_code};
use serde_json::{Value, json};

/// What every call of the binding returns.
pub type Result<T> = std::result::Result<T, napi::Error>;

/// The error for a library error: its message is the error's text, as the
/// CLI prints it after `error: `, its class the one python/src/errors.rs
/// raises for the same kind, and its exit code the CLI's.
pub fn to_napi(error: &agent_context::Error) -> napi::Error {
    let kind = error.kind();
    let code = exit_code(kind);
    let class = match error_class(kind) {
        ErrorClass::BudgetExceeded => "BudgetExceeded",
        ErrorClass::Compaction => "CompactionError",
        ErrorClass::Chat => "ChatError",
        ErrorClass::Store => "StoreError",
        ErrorClass::Input => "InputError",
        _ => "ContextError",
    };
    let mut payload = json!({"class": class, "message": error.to_string(), "exitCode": code});
    if let ErrorKind::BudgetExceeded {
        required,
        available,
        max_tokens,
        reserve_output,
    } = kind
    {
        payload["required"] = json!(required);
        payload["available"] = json!(available);
        payload["maxTokens"] = json!(max_tokens);
        payload["reserve"] = json!(reserve_output);
    }
    raw(&payload)
}

/// An `InputError` (exit status 2) with `message`: input or options the
/// binding itself refuses.
pub fn input_error(message: impl Into<String>) -> napi::Error {
    raw(&json!({"class": "InputError", "message": message.into(), "exitCode": 2}))
}

/// The `InputError` of an option's value, worded as the Python package
/// words its keyword's.
pub fn option_error(key: &str, message: impl std::fmt::Display) -> napi::Error {
    input_error(format!("invalid value for {key}: {message}"))
}

/// A `ContextError` for a panic caught in the library: a bug, never the
/// caller's fault, and never a crash of the process.
fn panic_error(payload: &(dyn Any + Send)) -> napi::Error {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_owned());
    internal(&what)
}

/// A `ContextError` for what cannot happen but did: a bug to report.
pub fn internal(what: &str) -> napi::Error {
    let message = format!("internal error in agent-context (please report it): {what}");
    raw(&json!({"class": "ContextError", "message": message, "exitCode": 1}))
}

fn raw(payload: &Value) -> napi::Error {
    napi::Error::new(napi::Status::GenericFailure, payload.to_string())
}

/// Runs `work`, its library error or panic turned into the payload's error.
pub fn guarded<T>(work: impl FnOnce() -> agent_context::Result<T>) -> Result<T> {
    match catch_unwind(AssertUnwindSafe(work)) {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(to_napi(&error)),
        Err(payload) => Err(panic_error(payload.as_ref())),
    }
}

/// As [`guarded`], for work whose own errors are the binding's already.
pub fn caught<T>(work: impl FnOnce() -> Result<T>) -> Result<T> {
    match catch_unwind(AssertUnwindSafe(work)) {
        Ok(outcome) => outcome,
        Err(payload) => Err(panic_error(payload.as_ref())),
    }
}
