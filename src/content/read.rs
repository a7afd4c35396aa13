//! Reading content from JSON: blocks in the reference's shape, with errors
//! that name the block and the field.

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::block::{Block, List, Node, Semantic, Table};
use crate::error::{ErrorKind, Result};

/// Reads content: one block or an array of blocks.
///
/// # Errors
///
/// [`ErrorKind::Content`] naming the block (`$[1].childBlocks[0]`) and
/// the field of the first unknown field or type, or of a value of the
/// wrong shape.
pub fn blocks_from_value(value: Value) -> Result<Vec<Block>> {
    match &value {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(index, item)| block_at(item, || format!("$[{index}]")))
            .collect(),
        value => Ok(vec![block_at(value, || "$".to_owned())?]),
    }
}

/// The block `value`, read once; `path` (where `value` is) is only
/// spelled out for an error.
fn block_at(value: &Value, path: impl Fn() -> String) -> Result<Block> {
    let block = read(value).map_err(|error| innermost_error(value, &path(), error))?;
    check(&block, &path)?;
    Ok(block)
}

/// What the types let through: a json block with neither `data` nor
/// `text`, and an attribute a collapsed reference does not have, in `block`
/// or in the blocks it holds.
fn check(block: &Block, path: &dyn Fn() -> String) -> Result<()> {
    let (children, children_path) = match block {
        Block::Json {
            data: None,
            text: None,
        } => {
            let message = "missing field `data` (or `text`, shown as it is)".to_owned();
            return Err(located(format!("{}.data", path()), message));
        }
        Block::Collapsed { child_blocks, .. } => (child_blocks, "childBlocks"),
        Block::Text {
            semantic: Some(semantic),
            ..
        } if semantic.is_collapsed() => {
            let Some(attrs) = &semantic.renderer_attrs else {
                return Ok(());
            };
            if let Some(key) = attrs.other.keys().next() {
                let message = format!(
                    "unknown attribute `{key}` of a collapsed block, expected `name`, \
                     `group` or `childBlocks`"
                );
                return Err(located(
                    format!("{}.semantic.rendererAttrs.{key}", path()),
                    message,
                ));
            }
            (&attrs.child_blocks, "semantic.rendererAttrs.childBlocks")
        }
        _ => return Ok(()),
    };
    for (index, child) in children.iter().enumerate() {
        check(child, &|| format!("{}.{children_path}[{index}]", path()))?;
    }
    Ok(())
}

fn located(path: String, message: String) -> crate::Error {
    ErrorKind::Content { path, message }.into()
}

type ReadError = serde_path_to_error::Error<serde_json::Error>;

/// `T` read from `value`, with the path of an error.
///
/// serde reads a tagged enum (a block, a node) from a buffer that holds no
/// 128-bit integers, and serde_json's `Value` hands an integer past 64 bits
/// over as one; a value holding such an integer is read from its JSON text,
/// which hands every number past 64 bits over as its digits.
fn read<T: DeserializeOwned>(value: &Value) -> std::result::Result<T, ReadError> {
    if !holds_wide_integer(value) {
        return serde_path_to_error::deserialize(value);
    }
    let text = value.to_string();
    let mut deserializer = serde_json::Deserializer::from_str(&text);
    // The text nests no deeper than the value, which serde reads
    // recursively either way.
    deserializer.disable_recursion_limit();
    serde_path_to_error::deserialize(&mut deserializer)
}

/// True for an integer that needs more than 64 bits but fits 128.
fn is_wide_integer(n: &serde_json::Number) -> bool {
    n.as_i64().is_none() && n.as_u64().is_none() && (n.as_i128().is_some() || n.as_u128().is_some())
}

/// True when an integer in `value` needs more than 64 bits but fits 128.
fn holds_wide_integer(value: &Value) -> bool {
    // A loop, not recursion: a `Value` built in Rust may nest without limit.
    let mut pending = vec![value];
    while let Some(value) = pending.pop() {
        match value {
            Value::Number(n) if is_wide_integer(n) => return true,
            Value::Array(items) => pending.extend(items),
            Value::Object(map) => pending.extend(map.values()),
            _ => {}
        }
    }
    false
}

/// The error of the innermost block that fails within `value` (at
/// `path`), or `error`, `value`'s own, when its child blocks are sound.
fn innermost_error(value: &Value, path: &str, error: ReadError) -> crate::Error {
    for field in ["/childBlocks", "/semantic/rendererAttrs/childBlocks"] {
        let children = value.pointer(field).and_then(Value::as_array);
        let at = field[1..].replace('/', ".");
        for (index, child) in children.into_iter().flatten().enumerate() {
            if let Err(inner) = block_at(child, || format!("{path}.{at}[{index}]")) {
                return inner;
            }
        }
    }
    // A tagged block is read from a buffer, which loses the path inside
    // it: a tree read again on its own finds the node that fails.
    if let Some(tree) = value.get("semanticNode")
        && let Err(inner) = read::<Node>(tree)
    {
        return content_error(&format!("{path}.semanticNode"), inner);
    }
    if let Some(semantic) = value.get("semantic") {
        let structure = semantic.get("structure");
        if let Some(error) =
            structure.and_then(|s| structure_error(s, &format!("{path}.semantic.structure")))
        {
            return error;
        }
        if let Err(inner) = read::<Semantic>(semantic) {
            return content_error(&format!("{path}.semantic"), inner);
        }
    }
    content_error(path, error)
}

/// The error of a legacy `structure` at `path`, read as the table or list
/// its fields say it is, down to the list item that fails: untagged, serde
/// would only say that it matched neither.
fn structure_error(structure: &Value, path: &str) -> Option<crate::Error> {
    let is_table = ["headers", "rows", "alignments"]
        .iter()
        .any(|key| structure.get(key).is_some());
    if is_table {
        let error = read::<Table>(structure).err()?;
        return Some(content_error(path, error));
    }
    let items = structure.get("items").and_then(Value::as_array);
    for (index, item) in items.into_iter().flatten().enumerate() {
        let item_path = format!("{path}.items[{index}]");
        if let Some(nested) = item.get("nested")
            && let Some(error) = structure_error(nested, &format!("{item_path}.nested"))
        {
            return Some(error);
        }
        if let Some(unknown) = item.as_object().and_then(|fields| {
            fields
                .keys()
                .find(|k| !["text", "checked", "nested"].contains(&k.as_str()))
        }) {
            let message =
                format!("unknown field `{unknown}`, expected `text`, `checked` or `nested`");
            return Some(
                ErrorKind::Content {
                    path: format!("{item_path}.{unknown}"),
                    message,
                }
                .into(),
            );
        }
    }
    let error = read::<List>(structure).err()?;
    Some(content_error(path, error))
}

/// `error`, found at `path`, with the path within it appended.
fn content_error(path: &str, error: ReadError) -> crate::Error {
    let inner = error.path().to_string();
    let path = match inner.as_str() {
        "." => path.to_owned(),
        inner => format!("{path}.{inner}"),
    };
    let error = error.into_inner();
    // Read from text (see `read`), an error says where in a text nobody wrote.
    let position = format!(" at line {} column {}", error.line(), error.column());
    let message = error.to_string();
    let message = message
        .strip_suffix(&position)
        .unwrap_or(&message)
        .to_owned();
    ErrorKind::Content { path, message }.into()
}
