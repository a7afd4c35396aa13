//! Content blocks and semantic trees in the reference's own JSON shape, so
//! blocks produced by it load as they are.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

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
    /// A JSON value, shown pretty-printed; or, without `data`, its `text`
    /// shown as it is (the reference echoes it).
    Json {
        /// The value (`null` included); absent when only `text` is given.
        #[serde(
            default,
            deserialize_with = "present",
            skip_serializing_if = "Option::is_none"
        )]
        data: Option<Value>,
        /// The reference's serialization of `data`: shown only when `data`
        /// is absent, since `data` is printed again, pretty.
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
    /// A change of state: `entity.field` went `from` one value `to` another,
    /// described by `text` when given.
    StateChange {
        /// What changed (`entity` when absent, as the reference says).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        entity: Option<String>,
        /// Which of its fields.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        field: Option<String>,
        /// The value before (`null` included; absent reads `undefined`).
        #[serde(
            default,
            deserialize_with = "present",
            skip_serializing_if = "Option::is_none"
        )]
        from: Option<Value>,
        /// The value after.
        #[serde(
            default,
            deserialize_with = "present",
            skip_serializing_if = "Option::is_none"
        )]
        to: Option<Value>,
        /// What caused it (kept, not shown: the reference shows no trigger).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        trigger: Option<String>,
        /// The change in words; described from the fields without.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
    },
    /// A call the model made to a tool: kept native by [`render_blocks`]
    /// (the reference passes it through), written as text elsewhere.
    ///
    /// [`render_blocks`]: super::render_blocks
    ToolUse {
        /// The call's id, which its result names.
        #[serde(rename = "toolUseId")]
        tool_use_id: String,
        /// The tool called.
        name: String,
        /// Its arguments.
        input: Value,
    },
    /// A named reference to content kept out of the prompt: its child
    /// blocks forced to text, or its `text` when it has none. The reference
    /// writes it as a text block whose `semantic` is `custom` with the
    /// `rendererTag` `collapsed` ([`RendererAttrs`]); both shapes load and
    /// render alike.
    Collapsed {
        /// The reference's name, e.g. `ref:1`.
        name: String,
        /// The group it belongs to, e.g. `msg:123`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        group: Option<String>,
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
    /// A `custom` block's renderer tag; `collapsed` makes the block a
    /// collapsed reference (see [`Block::Collapsed`]).
    #[serde(
        rename = "rendererTag",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub renderer_tag: Option<String>,
    /// The renderer tag's attributes.
    #[serde(
        rename = "rendererAttrs",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub renderer_attrs: Option<RendererAttrs>,
}

/// The attributes of a `custom` block's renderer tag. A `collapsed` tag has
/// `name`, `group` and `childBlocks` and nothing else; another tag's
/// attributes are its own (kept in `other`, not shown: the reference shows
/// such a block's text alone).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RendererAttrs {
    /// A collapsed reference's name (empty when absent, as the reference).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A collapsed reference's group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// The blocks a collapsed reference stands for.
    #[serde(rename = "childBlocks", default, skip_serializing_if = "Vec::is_empty")]
    pub child_blocks: Vec<Block>,
    /// Any other attribute.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// The renderer tag that makes a `custom` text block a collapsed reference.
pub(crate) const COLLAPSED_TAG: &str = "collapsed";

/// A collapsed reference as either shape gives it, for the renderers.
pub(crate) struct CollapsedRef<'a> {
    pub(crate) name: &'a str,
    pub(crate) group: Option<&'a str>,
    pub(crate) child_blocks: &'a [Block],
    /// What it shows when it has no child blocks.
    pub(crate) text: &'a str,
}

impl Block {
    /// This block as a collapsed reference: a [`Block::Collapsed`], or a
    /// text block whose `semantic` is `custom` with the renderer tag
    /// `collapsed`.
    pub(crate) fn as_collapsed(&self) -> Option<CollapsedRef<'_>> {
        match self {
            Block::Collapsed {
                name,
                group,
                child_blocks,
                text,
            } => Some(CollapsedRef {
                name,
                group: group.as_deref(),
                child_blocks,
                text: text.as_deref().unwrap_or_default(),
            }),
            Block::Text {
                text,
                semantic: Some(semantic),
                ..
            } if semantic.is_collapsed() => {
                let attrs = semantic.renderer_attrs.as_ref();
                Some(CollapsedRef {
                    name: attrs.and_then(|a| a.name.as_deref()).unwrap_or_default(),
                    group: attrs.and_then(|a| a.group.as_deref()),
                    child_blocks: attrs.map_or(&[], |a| &a.child_blocks),
                    text,
                })
            }
            _ => None,
        }
    }
}

impl Semantic {
    /// Whether this is a `custom` semantic with the renderer tag
    /// `collapsed`.
    pub(crate) fn is_collapsed(&self) -> bool {
        self.kind == SemanticType::Custom && self.renderer_tag.as_deref() == Some(COLLAPSED_TAG)
    }
}

/// Reads a field that may be `null` as `Some(null)`: present, unlike absent.
fn present<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
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
