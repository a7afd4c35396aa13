//! The class of error a binding raises for each kind: one sorting, so the
//! Python and Node.js packages name every error alike.

use crate::ErrorKind;

use super::exit_code;

/// What a binding raises for an error: its exception or error class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorClass {
    /// The protected content does not fit the budget (exit status 1).
    BudgetExceeded,
    /// A compaction refused: the caller's to fix, by planning again.
    Compaction,
    /// A store, chat, branch or checkpoint named wrong (exit status 2).
    Chat,
    /// A store that fails, a save that conflicts.
    Store,
    /// Other input or options the caller must fix (exit status 2).
    Input,
    /// Anything else: nobody's input.
    Other,
}

/// The class of an error of `kind`.
pub fn error_class(kind: &ErrorKind) -> ErrorClass {
    let input = exit_code(kind) == 2;
    match kind {
        ErrorKind::BudgetExceeded { .. } => ErrorClass::BudgetExceeded,
        ErrorKind::Compaction { .. } => ErrorClass::Compaction,
        kind if is_store(kind) && input => ErrorClass::Chat,
        kind if is_store(kind) => ErrorClass::Store,
        _ if input => ErrorClass::Input,
        _ => ErrorClass::Other,
    }
}

/// Errors of a store, or of naming one (`--db`, `--chat` and the names in
/// a chat).
fn is_store(kind: &ErrorKind) -> bool {
    match kind {
        ErrorKind::Store { .. }
        | ErrorKind::NotAStore { .. }
        | ErrorKind::Conflict { .. }
        | ErrorKind::SystemConflict { .. }
        | ErrorKind::Chat { .. } => true,
        ErrorKind::Option { option, .. } => option == "db",
        _ => false,
    }
}
