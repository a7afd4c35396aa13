//! Random content for the content renderers' property tests, built as the
//! reference's JSON so that the parser is exercised too: every semantic
//! type, legacy lists (nested, tasks) and tables with alignments, code, JSON,
//! user actions, collapsed blocks and media, over hostile text (Markdown and
//! XML metacharacters, entities, newlines, unicode).
//!
//! Renderer-agnostic: each renderer's test decides what its output must read
//! back as; [`text_leaves`] lists the text the blocks hold, in order.

use agent_context::content::{Block, Node, SemanticType, Structure, blocks_from_value};
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

/// A semantic tree at most `depth` elements deep, as JSON.
pub fn node_json(depth: u32) -> impl Strategy<Value = Value> {
    leaf().prop_recursive(depth, 40, 4, |inner| {
        let children = prop::collection::vec(inner, 0..4);
        (
            select(elements()),
            children,
            hostile_text(),
            href(),
            0..8u64,
            any::<bool>(),
        )
            .prop_map(|(semantic, children, text, href, level, ordered)| {
                let mut node = Map::new();
                if !semantic.is_empty() {
                    node.insert("semantic".into(), json!(semantic));
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
            })
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
fn simple_block_json(depth: u32) -> impl Strategy<Value = Value> {
    let language = select(&["", "ts", "rust", "c++", "a b", "x`y"][..]);
    prop_oneof![
        2 => hostile_text().prop_map(|text| json!({"type": "text", "text": text})),
        4 => node_json(depth).prop_map(|node| json!({"type": "text", "text": "", "semanticNode": node})),
        1 => (select(&["heading", "paragraph", "blockquote"][..]), 1..7u8, node_json(depth)).prop_map(
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
pub fn block_json(depth: u32) -> impl Strategy<Value = Value> {
    let children = prop::collection::vec(simple_block_json(depth), 0..3);
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
    prop_oneof![8 => simple_block_json(depth), 1 => table, 1 => collapsed]
}

/// Up to `max` blocks of any kind.
pub fn blocks(max: usize) -> impl Strategy<Value = Vec<Block>> {
    prop::collection::vec(block_json(3), 0..max).prop_map(|blocks| {
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

/// The leaves of `blocks`, in order. A legacy or node `line-break` or
/// `horizontal-rule` holds none (its text is not written, as in the
/// reference), nor does a child with a `text` beside its children.
pub fn text_leaves(blocks: &[Block]) -> Vec<Leaf> {
    let mut leaves = Vec::new();
    for block in blocks {
        block_leaves(block, &mut leaves);
    }
    leaves
}

fn block_leaves(block: &Block, leaves: &mut Vec<Leaf>) {
    match block {
        Block::Text {
            text,
            semantic_node,
            semantic,
        } => {
            let kind = semantic.as_ref().map(|s| s.kind);
            let preformatted = kind == Some(SemanticType::Preformatted)
                || semantic.as_ref().and_then(|s| s.preformatted) == Some(true);
            match (
                semantic.as_ref().and_then(|s| s.structure.as_ref()),
                semantic_node,
            ) {
                (Some(Structure::List(list)), _) if kind == Some(SemanticType::List) => {
                    list_leaves(list, leaves)
                }
                (Some(Structure::Table(table)), _) if kind == Some(SemanticType::Table) => {
                    let cells = table.headers.iter().chain(table.rows.iter().flatten());
                    leaves.extend(cells.map(|cell| Leaf::Text(cell.clone())));
                }
                (_, Some(node)) if preformatted => leaves.push(Leaf::Code(plain_text(node))),
                (_, Some(node)) => node_leaves(node, leaves),
                (_, None) if preformatted => leaves.push(Leaf::Code(text.clone())),
                _ if matches!(
                    kind,
                    Some(SemanticType::LineBreak | SemanticType::HorizontalRule)
                ) => {}
                _ => {
                    if let Some(href) = semantic.as_ref().and_then(|s| s.href.clone()) {
                        leaves.push(Leaf::Attribute(href));
                    }
                    leaves.push(Leaf::Text(text.clone()));
                }
            }
        }
        Block::Code { text, .. } => leaves.push(Leaf::Code(text.clone())),
        Block::Json { data, .. } => leaves.push(Leaf::Code(
            serde_json::to_string_pretty(data).expect("a value prints"),
        )),
        Block::Image(media) | Block::Audio(media) | Block::Video(media) => {
            leaves.push(Leaf::Attribute(media.source.href()));
            leaves.extend(media.alt_text.clone().map(Leaf::Attribute));
        }
        Block::UserAction {
            action,
            actor,
            target,
            text,
        } => match text {
            Some(text) if !text.trim().is_empty() => leaves.push(Leaf::Text(text.clone())),
            _ => {
                let fields = [actor.clone(), Some(action.clone()), target.clone()];
                leaves.extend(fields.into_iter().flatten().map(Leaf::Attribute));
            }
        },
        Block::Collapsed {
            name,
            child_blocks,
            text,
        } => {
            leaves.push(Leaf::Attribute(name.clone()));
            if child_blocks.is_empty() {
                leaves.extend(text.clone().map(Leaf::Text));
            }
            for child in child_blocks {
                block_leaves(child, leaves);
            }
        }
        other => panic!("no leaves for {other:?}"),
    }
}

fn list_leaves(list: &agent_context::content::List, leaves: &mut Vec<Leaf>) {
    for item in &list.items {
        leaves.push(Leaf::Text(item.text().to_owned()));
        if let Some(nested) = item.nested() {
            list_leaves(nested, leaves);
        }
    }
}

fn node_leaves(node: &Node, leaves: &mut Vec<Leaf>) {
    use SemanticType as S;
    match node.semantic {
        Some(S::LineBreak | S::HorizontalRule) => return,
        Some(S::Link) => leaves.extend(node.prop("href").map(|h| Leaf::Attribute(h.to_owned()))),
        Some(S::Image | S::Audio | S::Video) => {
            let props = [node.prop("src"), node.prop("alt")];
            leaves.extend(
                props
                    .into_iter()
                    .flatten()
                    .map(|p| Leaf::Attribute(p.to_owned())),
            );
        }
        _ => {}
    }
    if node.children.is_empty() {
        leaves.extend(node.text.clone().map(Leaf::Text));
    }
    for child in &node.children {
        node_leaves(child, leaves);
    }
}

/// The leaves' text of a tree, concatenated.
pub fn plain_text(node: &Node) -> String {
    if node.children.is_empty() {
        return node.text.clone().unwrap_or_default();
    }
    node.children.iter().map(plain_text).collect()
}
