//! The package's exceptions, and the library's errors (and panics) raised
//! as them.

use std::any::Any;

use agent_context::ErrorKind;
use agent_context::command::{ErrorClass, error_class};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};

/// `Error`, `InputError`, `BudgetExceeded`, `StoreError`, `ChatError`,
/// `CompactionError` and `ContextWarning`, made once per interpreter.
struct Types {
    error: Py<PyType>,
    input: Py<PyType>,
    compaction: Py<PyType>,
    budget: Py<PyType>,
    store: Py<PyType>,
    chat: Py<PyType>,
    warning: Py<PyType>,
}

static TYPES: PyOnceLock<Types> = PyOnceLock::new();

/// Makes the exception classes (the first time) and adds them to `module`.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = module.py();
    let types = TYPES.get_or_try_init(py, || make_types(py))?;
    module.add("Error", types.error.bind(py))?;
    module.add("InputError", types.input.bind(py))?;
    module.add("CompactionError", types.compaction.bind(py))?;
    module.add("BudgetExceeded", types.budget.bind(py))?;
    module.add("StoreError", types.store.bind(py))?;
    module.add("ChatError", types.chat.bind(py))?;
    module.add("ContextWarning", types.warning.bind(py))?;
    Ok(())
}

fn make_types(py: Python<'_>) -> PyResult<Types> {
    let builtins = py.import("builtins")?;
    let exception = builtins.getattr("Exception")?;
    let value_error = builtins.getattr("ValueError")?;
    let error = new_class(py, "Error", &[exception], ERROR_DOC)?;
    let base = error.clone().into_any();
    let input = new_class(py, "InputError", &[base.clone(), value_error], INPUT_DOC)?;
    let compaction = new_class(
        py,
        "CompactionError",
        &[input.clone().into_any()],
        COMPACTION_DOC,
    )?;
    let budget = new_class(
        py,
        "BudgetExceeded",
        std::slice::from_ref(&base),
        BUDGET_DOC,
    )?;
    let store = new_class(py, "StoreError", std::slice::from_ref(&base), STORE_DOC)?;
    let chat = new_class(
        py,
        "ChatError",
        &[store.clone().into_any(), input.clone().into_any()],
        CHAT_DOC,
    )?;
    let user_warning = builtins.getattr("UserWarning")?;
    let warning = new_class(py, "ContextWarning", &[user_warning], WARNING_DOC)?;
    Ok(Types {
        error: error.unbind(),
        input: input.unbind(),
        compaction: compaction.unbind(),
        budget: budget.unbind(),
        store: store.unbind(),
        chat: chat.unbind(),
        warning: warning.unbind(),
    })
}

const ERROR_DOC: &str = "The base of every error agent_context raises.";
const INPUT_DOC: &str = "Input or options the caller must fix: invalid JSON or schema, an \
    unknown option value, a cap too small, a chat or store named wrong. The message is the one \
    the agent-context CLI prints (exit status 2).";
const COMPACTION_DOC: &str = "A compaction refused (an InputError): a plan that no longer \
    holds (stale, forged, applied already, or made under other build settings), a summary that \
    is empty or not smaller than the span it folds, an engine with unsaved changes. Nothing was \
    written: plan again.";
const BUDGET_DOC: &str = "The protected content does not fit the budget: `.required` tokens \
    are needed, `.available` are available (max_tokens - reserve).";
const CHAT_DOC: &str = "A store, chat, branch, checkpoint or chunk named wrong (missing, or \
    a name taken; a db that is a directory, a device, an empty path or no SQLite file): both a \
    StoreError and an InputError.";
const WARNING_DOC: &str = "What the CLI writes to standard error as `warning: …`: an estimated \
    model, a budget above the model's window, a cap raised to its floor.";
const STORE_DOC: &str = "The store failed: a conflict with another writer, a database that \
    cannot be read or written.";

/// `type(name, bases, {...})`: a class of this module.
fn new_class<'py>(
    py: Python<'py>,
    name: &str,
    bases: &[Bound<'py, PyAny>],
    doc: &str,
) -> PyResult<Bound<'py, PyType>> {
    let namespace = PyDict::new(py);
    namespace.set_item("__module__", "agent_context")?;
    namespace.set_item("__doc__", doc)?;
    let bases = PyTuple::new(py, bases)?;
    let class = py
        .import("builtins")?
        .getattr("type")?
        .call1((name, bases, namespace))?;
    Ok(class.cast_into::<PyType>()?)
}

fn types(py: Python<'_>) -> PyResult<&Types> {
    TYPES.get_or_try_init(py, || make_types(py))
}

/// The exception for a library error: its message is the error's text, as
/// the CLI prints it after `error: `.
pub fn to_py(error: agent_context::Error) -> PyErr {
    Python::attach(|py| match raise(py, &error) {
        Ok(err) | Err(err) => err,
    })
}

fn raise(py: Python<'_>, error: &agent_context::Error) -> PyResult<PyErr> {
    let types = types(py)?;
    let message = error.to_string();
    let kind = error.kind();
    let class = match error_class(kind) {
        ErrorClass::BudgetExceeded => &types.budget,
        ErrorClass::Compaction => &types.compaction,
        ErrorClass::Chat => &types.chat,
        ErrorClass::Store => &types.store,
        ErrorClass::Input => &types.input,
        _ => &types.error,
    };
    let instance = class.bind(py).call1((message,))?;
    if let ErrorKind::BudgetExceeded {
        required,
        available,
        max_tokens,
        reserve_output,
    } = kind
    {
        instance.setattr("required", required)?;
        instance.setattr("available", available)?;
        instance.setattr("max_tokens", max_tokens)?;
        instance.setattr("reserve", reserve_output)?;
    }
    Ok(PyErr::from_value(instance))
}

/// An `InputError` with `message`.
pub fn input_error(message: impl Into<String>) -> PyErr {
    let message = message.into();
    Python::attach(|py| match types(py) {
        Ok(types) => PyErr::from_type(types.input.bind(py).clone(), message),
        Err(err) => err,
    })
}

/// An `Error` for a panic caught in the library: a bug, never the
/// caller's fault, and never a crash of the interpreter.
pub fn panic_error(payload: Box<dyn Any + Send>) -> PyErr {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_owned());
    let message = format!("internal error in agent-context (please report it): {what}");
    Python::attach(|py| match types(py) {
        Ok(types) => PyErr::from_type(types.error.bind(py).clone(), message),
        Err(err) => err,
    })
}

/// Runs `work` without the GIL, catching panics: what it returns, or the
/// exception for its error or panic.
pub fn detached<T: Send>(
    py: Python<'_>,
    work: impl FnOnce() -> agent_context::Result<T> + Send,
) -> PyResult<T> {
    let outcome = py.detach(|| std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)));
    match outcome {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(to_py(error)),
        Err(payload) => Err(panic_error(payload)),
    }
}

/// Issues each of `warnings` as a `ContextWarning`.
pub fn warn(py: Python<'_>, warnings: &[String]) -> PyResult<()> {
    if warnings.is_empty() {
        return Ok(());
    }
    let category = types(py)?.warning.bind(py);
    let warn = py.import("warnings")?.getattr("warn")?;
    for warning in warnings {
        warn.call1((warning, category, 2))?;
    }
    Ok(())
}
