//! Content blocks and semantic trees in the reference's own JSON shape, so
//! blocks produced by it load as they are.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{ErrorKind, Result};

/// One block of formatted content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum Block {
    /// Text, plain or shaped by a semantic tree (`semanticNode`) or by a
    /// block-level `semantic` (heading, list, table, …). With both, the
    /// tree gives the content and `semantic` its block shape.
    Text {
        /// The plain text (the tree's fallback when it has one).
        #[serde(default)]
        text: String,
        /// The semantic tree.
        #[serde(
            rename = "semanticNode",
            default,
            skip_serializing_if = "Option::is_none"
        )]
        semantic_node: Option<Node>,
        /// The block-level shape.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        semantic: Option<Semantic>,
    },
    /// Source code in a language.
    Code {
        /// The language, e.g. `rust` (a fence's info string).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        language: Option<String>,
        /// The code.
        text: String,
    },
    /// A JSON value, shown pretty-printed.
    Json {
        /// The value.
        data: Value,
        /// The reference's serialization of `data`, ignored when rendering:
        /// `data` is printed again, pretty.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
    },
    /// An image.
    Image(Media),
    /// A sound.
    Audio(Media),
    /// A video.
    Video(Media),
    /// Something a user did: who (`actor`), what (`action`), to what
    /// (`target`), with an optional description (`text`).
    UserAction {
        /// What was done.
        action: String,
        /// Who did it (a user when absent).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        actor: Option<String>,
        /// What it was done to.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target: Option<String>,
        /// A description; the event is described from its fields without.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
    },
    /// A named reference to content kept out of the prompt: its child
    /// blocks forced to text, or its `text` when it has none.
    Collapsed {
        /// The reference's name, e.g. `ref:1`.
        name: String,
        /// The blocks it stands for.
        #[serde(rename = "childBlocks", default, skip_serializing_if = "Vec::is_empty")]
        child_blocks: Vec<Block>,
        /// What it shows when it has no child blocks.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
    },
}

/// A media block: where it is, and words for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Media {
    /// Where the media is.
    pub source: Source,
    /// Words for it (images).
    #[serde(rename = "altText", default, skip_serializing_if = "Option::is_none")]
    pub alt_text: Option<String>,
    /// Its MIME type.
    #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

/// Where a media block is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum Source {
    /// At a URL.
    Url {
        /// The URL.
        url: String,
    },
    /// Inline, base64-encoded.
    Base64 {
        /// The encoded bytes.
        data: String,
        /// Their MIME type.
        #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
    },
}

impl Source {
    /// What a text rendering links to: the URL, or a `data:` URL.
    pub fn href(&self) -> String {
        match self {
            Source::Url { url } => url.clone(),
            Source::Base64 { data, mime_type } => format!(
                "data:{};base64,{data}",
                mime_type.as_deref().unwrap_or("application/octet-stream")
            ),
        }
    }
}

/// A node of a semantic tree: a leaf of text, or a semantic element
/// around children.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Node {
    /// The leaf's text (ignored when the node has children).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// What the node means; `None` for plain content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semantic: Option<SemanticType>,
    /// Its properties: `href` (link), `src` and `alt` (media), `level`
    /// (heading), `_tagName` or `rendererTag` (custom).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub props: Map<String, Value>,
    /// Its children, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<Node>,
    /// The renderer of this subtree, when not the surrounding one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renderer: Option<ContentFormat>,
}

impl Node {
    /// A leaf of text.
    pub fn text(text: impl Into<String>) -> Node {
        Node {
            text: Some(text.into()),
            ..Node::default()
        }
    }

    /// A `semantic` element around `children`.
    pub fn element(semantic: SemanticType, children: Vec<Node>) -> Node {
        Node {
            semantic: Some(semantic),
            children,
            ..Node::default()
        }
    }

    /// The string property `key`, when set.
    pub fn prop(&self, key: &str) -> Option<&str> {
        self.props.get(key).and_then(Value::as_str)
    }
}

/// What a node or block means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
#[allow(missing_docs)]
pub enum SemanticType {
    Strong,
    Em,
    Mark,
    Underline,
    Strikethrough,
    Subscript,
    Superscript,
    Small,
    Code,
    Heading,
    Paragraph,
    Blockquote,
    List,
    ListItem,
    Table,
    LineBreak,
    HorizontalRule,
    Preformatted,
    Link,
    Image,
    Audio,
    Video,
    Quote,
    Citation,
    Keyboard,
    Variable,
    Custom,
}

/// The block-level shape of a text block (the reference's legacy form).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Semantic {
    /// What the block is.
    #[serde(rename = "type")]
    pub kind: SemanticType,
    /// A heading's level, 1 to 6 (default 2 for a legacy heading, as the
    /// reference writes it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<u8>,
    /// A table's or a list's structure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structure: Option<Structure>,
    /// A link's destination.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub href: Option<String>,
    /// Text shown as it is, in a code block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preformatted: Option<bool>,
}

/// A table or a list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum Structure {
    /// Rows under headers.
    Table(Table),
    /// Items, maybe nested, maybe tasks.
    List(List),
}

/// A table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Table {
    /// The header cells (none: no header row).
    pub headers: Vec<String>,
    /// The body rows.
    pub rows: Vec<Vec<String>>,
    /// Each column's alignment (left when absent).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alignments: Vec<Alignment>,
}

/// How a table column is aligned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum Alignment {
    #[default]
    Left,
    Center,
    Right,
}

/// A list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct List {
    /// Numbered (`1.`) rather than bulleted.
    #[serde(default)]
    pub ordered: bool,
    /// Items are tasks with a checkbox.
    #[serde(default)]
    pub task: bool,
    /// The items.
    pub items: Vec<ListItem>,
}

/// An item of a list: its text, or its text with a checkbox and a nested
/// list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
#[non_exhaustive]
pub enum ListItem {
    /// Just text.
    Text(String),
    /// Text with a state and a nested list.
    Item {
        /// The item's text.
        text: String,
        /// Whether a task is done (unchecked when absent).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        checked: Option<bool>,
        /// A list under the item.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        nested: Option<List>,
    },
}

impl ListItem {
    /// The item's text.
    pub fn text(&self) -> &str {
        match self {
            ListItem::Text(text) | ListItem::Item { text, .. } => text,
        }
    }

    /// Whether the item is checked.
    pub fn checked(&self) -> bool {
        matches!(
            self,
            ListItem::Item {
                checked: Some(true),
                ..
            }
        )
    }

    /// The list under the item.
    pub fn nested(&self) -> Option<&List> {
        match self {
            ListItem::Item { nested, .. } => nested.as_ref(),
            ListItem::Text(_) => None,
        }
    }
}

/// Which renderer formats content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ContentFormat {
    /// GitHub Flavored Markdown (tables, task lists `- [x]`,
    /// strikethrough). `"markdown"` in JSON reads as this.
    #[default]
    #[serde(alias = "markdown", alias = "github")]
    Gfm,
    /// CommonMark without extensions: task items as `- ✓` / `- ○`.
    Commonmark,
    /// XML (HTML-like tags), text and attributes escaped.
    Xml,
}

impl ContentFormat {
    /// The format named `name` (`gfm`, `markdown`, `github`, `commonmark`,
    /// `xml`), as the CLI and JSON spell it.
    pub fn from_name(name: &str) -> Option<ContentFormat> {
        match name {
            "gfm" | "markdown" | "github" => Some(ContentFormat::Gfm),
            "commonmark" => Some(ContentFormat::Commonmark),
            "xml" => Some(ContentFormat::Xml),
            _ => None,
        }
    }

    /// The name JSON and the CLI use.
    pub fn name(self) -> &'static str {
        match self {
            ContentFormat::Gfm => "gfm",
            ContentFormat::Commonmark => "commonmark",
            ContentFormat::Xml => "xml",
        }
    }
}

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
    read(value).map_err(|error| innermost_error(value, &path(), error))
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
    let children = value.get("childBlocks").and_then(Value::as_array);
    for (index, child) in children.into_iter().flatten().enumerate() {
        if let Err(inner) = block_at(child, || format!("{path}.childBlocks[{index}]")) {
            return inner;
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
