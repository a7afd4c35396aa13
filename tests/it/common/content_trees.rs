//! Random content for the content renderers' property tests, built as the
//! reference's JSON so that the parser is exercised too: every semantic
//! type, legacy lists (nested, tasks) and tables with alignments, code, JSON,
//! user actions, collapsed blocks and media, over hostile text (Markdown and
//! XML metacharacters, entities, newlines, unicode).
//!
//! Renderer-agnostic: each renderer's test decides what its output must read
//! back as; [`text_leaves`] lists the text the blocks hold, in order.

use agent_context::content::{
    Block, ContentFormat, List, Node, Semantic, SemanticType, Structure, blocks_from_value,
};
use proptest::prelude::*;
use proptest::sample::select;
use serde_json::{Map, Value, json};

/// Pieces of text that markup languages read as markup.
const HOSTILE: &[&str] = &[
    "*",
    "**",
    "_",
    "__",
    "`",
    "``",
    "```",
    "~",
    "~~",
    "~~~",
    "[",
    "]",
    "](",
    "[x] ",
    "<",
    ">",
    "<b>",
    "</collapsed>",
    "<!--",
    "<http://a.b>",
    "#",
    "# ",
    "- ",
    "+ ",
    "* ",
    "1. ",
    "2) ",
    "|",
    "---",
    "===",
    "&",
    "&amp;",
    "&#35;",
    "&lt",
    "!",
    "![",
    "\\",
    "\\*",
    "\"",
    "'",
    "(",
    ")",
    ":",
    "\n",
    "\n\n",
    "\r",
    "\r\n",
    "\t",
    "\u{1}",
    "  \n",
    "    ",
    " ",
    ".",
    "a",
    "word",
    "snake_case",
    "x_",
    "9",
    "é",
    "日本語",
    "🦀",
    "e\u{301}",
    "Ⓐ",
    "\u{a0}",
    "—",
];

/// Link and media targets: plain, relative, with spaces, parentheses,
/// brackets, backslashes and entities.
const HREFS: &[&str] = &[
    "https://example.com/a_b?c=1&d=2",
    "/docs",
    "",
    "a b",
    "x(y)",
    "x)",
    "<z>",
    "a\\b",
    "&amp;",
    "data:image/png;base64,iVBOR",
];

/// Every semantic type, as JSON names it.
pub const SEMANTIC_TYPES: &[&str] = &[
    "strong",
    "em",
    "mark",
    "underline",
    "strikethrough",
    "subscript",
    "superscript",
    "small",
    "code",
    "heading",
    "paragraph",
    "blockquote",
    "list",
    "list-item",
    "table",
    "line-break",
    "horizontal-rule",
    "preformatted",
    "link",
    "image",
    "audio",
    "video",
    "quote",
    "citation",
    "keyboard",
    "variable",
    "custom",
];

/// The types that are leaves: media and breaks hold no children.
const LEAVES: &[&str] = &["line-break", "horizontal-rule", "image", "audio", "video"];

/// The types that hold children, and `""` for a node without a type.
fn elements() -> Vec<&'static str> {
    SEMANTIC_TYPES
        .iter()
        .copied()
        .filter(|kind| !LEAVES.contains(kind))
        .chain([""])
        .collect()
}

/// Text built of hostile pieces and plain words.
pub fn hostile_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        3 => select(HOSTILE).prop_map(str::to_owned),
        1 => "[a-z ]{1,6}",
    ];
    prop::collection::vec(piece, 0..6).prop_map(|pieces| pieces.concat())
}

/// A link or media target.
pub fn href() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => select(HREFS).prop_map(str::to_owned),
        1 => "[a-z/:.?=&()<>\\[\\] \\\\]{0,12}",
    ]
}

/// A leaf: text, a break or rule, or a medium.
fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        6 => hostile_text().prop_map(|text| json!({"text": text})),
        1 => select(&["line-break", "horizontal-rule"][..]).prop_map(|s| json!({"semantic": s})),
        1 => (hostile_text(), href())
            .prop_map(|(alt, src)| json!({"semantic": "image", "props": {"src": src, "alt": alt}})),
        1 => (select(&["audio", "video"][..]), href())
            .prop_map(|(s, src)| json!({"semantic": s, "props": {"src": src}})),
    ]
}

/// Whether trees name renderers of their own for some subtrees.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Switching {
    /// Every subtree in the document's renderer.
    Off,
    /// One element in eight names a renderer (`xml`, `gfm`, `markdown`,
    /// `commonmark`).
    On,
}

/// 64 cases, or `PROPTEST_CASES`.
pub fn config() -> ProptestConfig {
    super::proptest_config_with(64)
}

/// A renderer for an element to switch to, or none.
fn renderer(switching: Switching) -> BoxedStrategy<Option<&'static str>> {
    match switching {
        Switching::Off => Just(None).boxed(),
        Switching::On => {
            prop::option::weighted(0.125, select(&["xml", "gfm", "markdown", "commonmark"][..]))
                .boxed()
        }
    }
}

/// A semantic tree at most `depth` elements deep, as JSON.
pub fn node_json(depth: u32, switching: Switching) -> impl Strategy<Value = Value> {
    leaf().prop_recursive(depth, 40, 4, move |inner| {
        let children = prop::collection::vec(inner, 0..4);
        (
            (select(elements()), renderer(switching)),
            children,
            hostile_text(),
            href(),
            0..8u64,
            any::<bool>(),
        )
            .prop_map(
                |((semantic, renderer), children, text, href, level, ordered)| {
                    let mut node = Map::new();
                    if !semantic.is_empty() {
                        node.insert("semantic".into(), json!(semantic));
                    }
                    if let Some(renderer) = renderer {
                        node.insert("renderer".into(), json!(renderer));
                    }
                    let props = match semantic {
                        "link" => json!({"href": href}),
                        "heading" => json!({"level": level}),
                        "list" => json!({"ordered": ordered}),
                        "custom" => json!({"_tagName": "note"}),
                        _ => json!({}),
                    };
                    node.insert("props".into(), props);
                    if children.is_empty() {
                        node.insert("text".into(), json!(text));
                    } else {
                        node.insert("children".into(), json!(children));
                    }
                    Value::Object(node)
                },
            )
    })
}

/// A legacy list structure, nested at most `depth` times.
fn list_json(depth: u32) -> BoxedStrategy<Value> {
    let nested = if depth == 0 {
        Just(None).boxed()
    } else {
        prop::option::weighted(0.3, list_json(depth - 1)).boxed()
    };
    let item = prop_oneof![
        hostile_text().prop_map(|text| json!(text)),
        (hostile_text(), prop::option::of(any::<bool>()), nested).prop_map(
            |(text, checked, nested)| {
                let mut item = json!({"text": text});
                if let Some(checked) = checked {
                    item["checked"] = json!(checked);
                }
                if let Some(nested) = nested {
                    item["nested"] = nested;
                }
                item
            }
        ),
    ];
    (
        any::<bool>(),
        any::<bool>(),
        prop::collection::vec(item, 0..4),
    )
        .prop_map(
            |(ordered, task, items)| json!({"ordered": ordered, "task": task, "items": items}),
        )
        .boxed()
}

fn table_json() -> impl Strategy<Value = Value> {
    let cells = |n| prop::collection::vec(hostile_text(), 0..n);
    let alignment = select(&["left", "center", "right"][..]);
    (
        cells(4),
        prop::collection::vec(cells(5), 0..4),
        prop::collection::vec(alignment, 0..5),
    )
        .prop_map(|(headers, rows, alignments)| {
            json!({"headers": headers, "rows": rows, "alignments": alignments})
        })
}

/// A JSON value with hostile strings.
fn json_value() -> impl Strategy<Value = Value> {
    let scalar = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i32>().prop_map(Value::from),
        hostile_text().prop_map(Value::from),
    ];
    scalar.prop_recursive(2, 12, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::from),
            prop::collection::btree_map(hostile_text(), inner, 0..3)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

fn media_json() -> impl Strategy<Value = Value> {
    let source = prop_oneof![
        href().prop_map(|url| json!({"type": "url", "url": url})),
        "[A-Za-z0-9+/]{0,12}"
            .prop_map(|data| json!({"type": "base64", "data": data, "mimeType": "image/png"})),
    ];
    (
        select(&["image", "audio", "video"][..]),
        source,
        prop::option::of(hostile_text()),
    )
        .prop_map(|(kind, source, alt)| {
            let mut block = json!({"type": kind, "source": source});
            if let Some(alt) = alt {
                block["altText"] = json!(alt);
            }
            block
        })
}

fn action_json() -> impl Strategy<Value = Value> {
    let actor = prop_oneof![
        select(&["user", "User", "assistant"][..]).prop_map(str::to_owned),
        hostile_text()
    ];
    let text = prop::option::of(hostile_text());
    (
        hostile_text(),
        prop::option::of(actor),
        prop::option::of(hostile_text()),
        text,
    )
        .prop_map(|(action, actor, target, text)| {
            let mut block = json!({"type": "user_action", "action": action});
            for (key, value) in [("actor", actor), ("target", target), ("text", text)] {
                if let Some(value) = value {
                    block[key] = json!(value);
                }
            }
            block
        })
}

/// Blocks that are not collapsed and not tables: what a collapsed block
/// holds here.
fn simple_block_json(depth: u32, switching: Switching) -> impl Strategy<Value = Value> {
    let language = select(&["", "ts", "rust", "c++", "a b", "x`y"][..]);
    prop_oneof![
        2 => hostile_text().prop_map(|text| json!({"type": "text", "text": text})),
        4 => node_json(depth, switching).prop_map(|node| json!({"type": "text", "text": "", "semanticNode": node})),
        1 => (select(&["heading", "paragraph", "blockquote"][..]), 1..7u8, node_json(depth, switching)).prop_map(
            |(kind, level, node)| json!({"type": "text", "text": "",
                "semantic": {"type": kind, "level": level}, "semanticNode": node})),
        2 => (select(SEMANTIC_TYPES), hostile_text(), href(), 1..7u8).prop_map(
            |(kind, text, href, level)| json!({"type": "text", "text": text,
                "semantic": {"type": kind, "level": level, "href": href}})),
        1 => (hostile_text(), any::<bool>()).prop_map(|(text, flag)| {
            let semantic = if flag { json!({"type": "preformatted"}) }
                else { json!({"type": "paragraph", "preformatted": true}) };
            json!({"type": "text", "text": text, "semantic": semantic})
        }),
        2 => list_json(2).prop_map(|list| json!({"type": "text", "text": "",
            "semantic": {"type": "list", "structure": list}})),
        1 => (language, hostile_text()).prop_map(|(language, text)| {
            json!({"type": "code", "language": language, "text": text})
        }),
        1 => json_value().prop_map(|data| json!({"type": "json", "data": data})),
        1 => media_json(),
        1 => action_json(),
    ]
}

/// One block of any kind, as JSON.
pub fn block_json(depth: u32, switching: Switching) -> impl Strategy<Value = Value> {
    let children = prop::collection::vec(simple_block_json(depth, switching), 0..3);
    let collapsed =
        (hostile_text(), children, hostile_text()).prop_map(|(name, children, text)| {
            if children.is_empty() {
                json!({"type": "collapsed", "name": name, "text": text})
            } else {
                json!({"type": "collapsed", "name": name, "childBlocks": children})
            }
        });
    let table = table_json().prop_map(|table| {
        json!({"type": "text", "text": "", "semantic": {"type": "table", "structure": table}})
    });
    prop_oneof![8 => simple_block_json(depth, switching), 1 => table, 1 => collapsed]
}

/// Up to `max` blocks of any kind.
pub fn blocks(max: usize, switching: Switching) -> impl Strategy<Value = Vec<Block>> {
    prop::collection::vec(block_json(3, switching), 0..max).prop_map(|blocks| {
        blocks_from_value(Value::Array(blocks)).expect("generated content is valid")
    })
}

/// A piece of what a block holds, for a renderer to keep.
#[derive(Debug, Clone, PartialEq)]
pub enum Leaf {
    /// Text a renderer escapes: a tree's leaf, a plain or legacy block's
    /// text, a list item, a table cell (headers, then rows), a user action's
    /// `text`, a collapsed block's `text`.
    Text(String),
    /// Text shown as it is: code, JSON pretty-printed, a preformatted
    /// block's text.
    Code(String),
    /// A value written about something: a link's `href`, a medium's source
    /// and alt text, a collapsed block's name, a user action's actor,
    /// action and target when it has no `text`.
    Attribute(String),
}

/// The leaves of `blocks` rendered in `format`, in order. A legacy or node
/// `line-break` or `horizontal-rule` holds none (its text is not written,
/// as in the reference), nor does a child with a `text` beside its
/// children, nor a legacy block's `href` unless it is a link, nor an
/// audio or video block's alt text. A subtree in a renderer of another
/// family than `format`'s (XML against Markdown) is one leaf: its own
/// rendering, which the document holds as text.
pub fn text_leaves(blocks: &[Block], format: ContentFormat) -> Vec<Leaf> {
    let mut leaves = Leaves {
        xml: format == ContentFormat::Xml,
        leaves: Vec::new(),
    };
    for block in blocks {
        leaves.block(block);
    }
    leaves.leaves
}

struct Leaves {
    /// Whether the document is XML (else Markdown).
    xml: bool,
    leaves: Vec<Leaf>,
}

impl Leaves {
    fn push(&mut self, leaf: Leaf) {
        self.leaves.push(leaf);
    }

    fn block(&mut self, block: &Block) {
        match block {
            Block::Text {
                text,
                semantic_node,
                semantic,
            } => self.text_block(text, semantic_node.as_ref(), semantic.as_ref()),
            Block::Code { text, .. } => self.push(Leaf::Code(text.clone())),
            Block::Json { data, .. } => self.push(Leaf::Code(
                serde_json::to_string_pretty(data).expect("a value prints"),
            )),
            Block::Image(media) => {
                self.push(Leaf::Attribute(media.source.href()));
                self.leaves
                    .extend(media.alt_text.clone().map(Leaf::Attribute));
            }
            Block::Audio(media) | Block::Video(media) => {
                self.push(Leaf::Attribute(media.source.href()))
            }
            Block::UserAction {
                action,
                actor,
                target,
                text,
            } => match text {
                Some(text) if !text.trim().is_empty() => self.push(Leaf::Text(text.clone())),
                _ => {
                    let fields = [actor.clone(), Some(action.clone()), target.clone()];
                    self.leaves
                        .extend(fields.into_iter().flatten().map(Leaf::Attribute));
                }
            },
            Block::Collapsed {
                name,
                child_blocks,
                text,
                ..
            } => {
                self.push(Leaf::Attribute(name.clone()));
                if child_blocks.is_empty() {
                    self.leaves.extend(text.clone().map(Leaf::Text));
                }
                for child in child_blocks {
                    self.block(child);
                }
            }
            other => panic!("no leaves for {other:?}"),
        }
    }

    fn text_block(&mut self, text: &str, node: Option<&Node>, semantic: Option<&Semantic>) {
        let kind = semantic.map(|s| s.kind);
        let preformatted = kind == Some(SemanticType::Preformatted)
            || semantic.and_then(|s| s.preformatted) == Some(true);
        match (semantic.and_then(|s| s.structure.as_ref()), node) {
            (Some(Structure::List(list)), _) if kind == Some(SemanticType::List) => self.list(list),
            (Some(Structure::Table(table)), _) if kind == Some(SemanticType::Table) => {
                let cells = table.headers.iter().chain(table.rows.iter().flatten());
                self.leaves
                    .extend(cells.map(|cell| Leaf::Text(cell.clone())));
            }
            (_, Some(node)) if preformatted => self.push(Leaf::Code(plain_text(node))),
            (_, Some(node)) => self.node(node),
            (_, None) if preformatted => self.push(Leaf::Code(text.to_owned())),
            _ if matches!(
                kind,
                Some(SemanticType::LineBreak | SemanticType::HorizontalRule)
            ) => {}
            _ => {
                if kind == Some(SemanticType::Link) {
                    let href = semantic.and_then(|s| s.href.clone());
                    self.leaves.extend(href.map(Leaf::Attribute));
                }
                self.push(Leaf::Text(text.to_owned()));
            }
        }
    }

    fn list(&mut self, list: &List) {
        for item in &list.items {
            self.push(Leaf::Text(item.text().to_owned()));
            if let Some(nested) = item.nested() {
                self.list(nested);
            }
        }
    }

    fn node(&mut self, node: &Node) {
        use SemanticType as S;
        if let Some(format) = node
            .renderer
            .filter(|f| (*f == ContentFormat::Xml) != self.xml)
        {
            let mut foreign = String::new();
            format.renderer().write_node(node, &mut foreign);
            return self.push(Leaf::Code(foreign));
        }
        match node.semantic {
            Some(S::LineBreak | S::HorizontalRule) => return,
            Some(S::Link) => {
                let href = node.prop("href").map(|h| Leaf::Attribute(h.to_owned()));
                self.leaves.extend(href);
            }
            Some(S::Image) => {
                let props = [node.prop("src"), node.prop("alt")];
                let props = props.into_iter().flatten();
                self.leaves
                    .extend(props.map(|p| Leaf::Attribute(p.to_owned())));
            }
            Some(S::Audio | S::Video) => {
                let src = node.prop("src").map(|p| Leaf::Attribute(p.to_owned()));
                self.leaves.extend(src);
            }
            _ => {}
        }
        if node.children.is_empty() {
            self.leaves.extend(node.text.clone().map(Leaf::Text));
        }
        for child in &node.children {
            self.node(child);
        }
    }
}

/// The leaves' text of a tree, concatenated.
pub fn plain_text(node: &Node) -> String {
    if node.children.is_empty() {
        return node.text.clone().unwrap_or_default();
    }
    node.children.iter().map(plain_text).collect()
}
