//! `--context-management JSON|FILE`: Anthropic's `context_management`
//! object for a build, given inline or in a file.

use std::fs::File;
use std::io::Read;

use crate::budget::ContextManagement;
use crate::{ErrorKind, MemoryState, ParseOptions, Result, parse_json};
use serde_json::json;

/// The flag, as its errors name it.
const FLAG: &str = "--context-management";

/// The largest file the flag reads. An object of a few edits is a few
/// hundred bytes: a larger file is another file (or `/dev/zero`).
const MAX_FILE_BYTES: u64 = 1 << 20;

/// The object `value` gives: inline JSON when it is JSON other than a
/// bare string (`{…}`, and also `null`, `[]` or `5`, refused as no
/// object) and no file has that name, else the path of a JSON file.
///
/// # Errors
///
/// [`ErrorKind::Option`] naming the flag: an empty value, a file that
/// cannot be read, JSON that is malformed or not an object, or an object
/// that is not Anthropic's (the field at fault named by its path,
/// `edits[0].keep`).
pub fn read_context_management(value: &str) -> Result<ContextManagement> {
    if value.trim().is_empty() {
        return Err(flag_error(
            "the value is empty; give Anthropic's object inline, e.g. {\"edits\": []}, or the \
             path of a file holding it"
                .into(),
        ));
    }
    let (source, text) = if is_inline(value) {
        ("the inline JSON".to_owned(), value.to_owned())
    } else {
        (format!("file {value:?}"), read_file(value)?)
    };
    let json = parse_json(&text, ParseOptions::new())
        .map_err(|error| flag_error(format!("{source}: {error}")))?;
    if !json.is_object() {
        // A session reads `null` as no object at all.
        return Err(flag_error(format!(
            "{source} is not a JSON object; give Anthropic's object, e.g. {{\"edits\": []}}"
        )));
    }
    // Read as a session's `context_management` field is: the flag and the
    // field take the same objects, and explain a fault alike.
    let session = MemoryState::from_json_value(json!({ "context_management": json }));
    session
        .map(|state| state.context_management.unwrap_or_default())
        .map_err(|error| match error.kind() {
            ErrorKind::Session { field, message } => {
                match field.strip_prefix("context_management.") {
                    Some(path) => flag_error(format!("{source}, at `{path}`: {message}")),
                    None => flag_error(format!("{source}: {message}")),
                }
            }
            other => flag_error(format!("{source}: {other}")),
        })
}

/// Whether `value` is the object's JSON itself rather than a path: it
/// opens an object, an array or a string, or it is other JSON (`null`,
/// `5`) that names no file; the caller refuses all but an object.
fn is_inline(value: &str) -> bool {
    value.trim_start().starts_with(['{', '[', '"'])
        || (!std::path::Path::new(value).exists() && parse_json(value, ParseOptions::new()).is_ok())
}

/// The text of the file at `path`, refused past [`MAX_FILE_BYTES`].
fn read_file(path: &str) -> Result<String> {
    if path == "-" {
        return Err(flag_error(
            "standard input is not read for it; give the object inline ({\"edits\": [...]}) or \
             the path of a file holding it"
                .into(),
        ));
    }
    let mut text = String::new();
    File::open(path)
        .and_then(|file| file.take(MAX_FILE_BYTES + 1).read_to_string(&mut text))
        .map_err(|error| flag_error(format!("cannot read file {path:?}: {error}")))?;
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(flag_error(format!(
            "file {path:?} is larger than 1 MiB, and a context_management object is a few \
             hundred bytes; is it the right file?"
        )));
    }
    Ok(text)
}

fn flag_error(message: String) -> crate::Error {
    ErrorKind::Option {
        option: FLAG.into(),
        message,
    }
    .into()
}
