//! XML: the reference's tag table (`<strong>`, `<s>`, `<h2>`, `<p>`,
//! `<a href>`, `<img src alt />`, `<ul>`/`<ol>`/`<li>`, `<table>`), with
//! every text and attribute escaped, so the output is well formed and its
//! text reads back as written.

use std::fmt::Write as _;

use crate::syntax::xml::{self, Escapes};

use super::block::{
    Alignment, Block, ContentFormat, List, Media, Node, Semantic, SemanticType, Structure, Table,
};
use super::described::{json_text, state_change_text, tool_input_text};
use super::renderer::{ContentRenderer, write_text};

/// Writes content as XML.
#[derive(Debug, Clone, Copy, Default)]
pub struct XmlRenderer;

impl ContentRenderer for XmlRenderer {
    fn write_block(&self, block: &Block, out: &mut String) {
        match block {
            Block::Text {
                text,
                semantic_node,
                semantic,
            } if !semantic.as_ref().is_some_and(Semantic::is_collapsed) => {
                self.write_text_block(text, semantic_node.as_ref(), semantic.as_ref(), out);
            }
            Block::Text { .. } | Block::Collapsed { .. } => self.write_collapsed(block, out),
            Block::Code { language, text } => write_code(language.as_deref(), text, out),
            Block::Json { data, text } => {
                write_code(
                    Some("json"),
                    &json_text(data.as_ref(), text.as_deref()),
                    out,
                );
            }
            Block::Image(media) => write_media("img", media, out),
            Block::Audio(media) => write_media("audio", media, out),
            Block::Video(media) => write_media("video", media, out),
            Block::UserAction {
                action,
                actor,
                target,
                text,
            } => {
                out.push_str("<user-action");
                write_attribute(out, "actor", actor.as_deref());
                write_attribute(out, "action", Some(action));
                write_attribute(out, "target", target.as_deref());
                out.push('>');
                match text.as_deref().filter(|t| !t.trim().is_empty()) {
                    Some(text) => escape(text, out),
                    None => escape(
                        &describe_action(action, actor.as_deref(), target.as_deref()),
                        out,
                    ),
                }
                out.push_str("</user-action>");
            }
            Block::StateChange {
                entity,
                field,
                from,
                to,
                text,
                ..
            } => {
                let (entity, field) = (non_empty(entity.as_deref()), non_empty(field.as_deref()));
                out.push_str("<state-change");
                write_attribute(out, "entity", entity);
                write_attribute(out, "field", field);
                out.push('>');
                let words =
                    state_change_text(entity, field, from.as_ref(), to.as_ref(), text.as_deref());
                escape(&words, out);
                out.push_str("</state-change>");
            }
            Block::ToolUse {
                tool_use_id,
                name,
                input,
            } => {
                out.push_str("<tool-use");
                write_attribute(out, "id", Some(tool_use_id));
                write_attribute(out, "name", Some(name));
                out.push('>');
                escape(&tool_input_text(input), out);
                out.push_str("</tool-use>");
            }
        }
    }

    fn write_node(&self, node: &Node, out: &mut String) {
        let Some(semantic) = node.semantic else {
            return self.write_content(node, out);
        };
        match semantic {
            SemanticType::LineBreak => out.push_str("<br/>"),
            SemanticType::HorizontalRule => out.push_str("<hr/>"),
            SemanticType::Image => {
                out.push_str("<img");
                write_attribute(out, "src", node.prop("src"));
                write_attribute(out, "alt", node.prop("alt"));
                out.push_str(" />");
            }
            SemanticType::Audio | SemanticType::Video => {
                let tag = if semantic == SemanticType::Audio {
                    "audio"
                } else {
                    "video"
                };
                let _ = write!(out, "<{tag}");
                write_attribute(out, "src", node.prop("src"));
                out.push_str(" />");
            }
            SemanticType::Link => match node.prop("href").filter(|h| !h.is_empty()) {
                Some(href) => {
                    out.push_str("<a");
                    write_attribute(out, "href", Some(href));
                    out.push('>');
                    self.write_content(node, out);
                    out.push_str("</a>");
                }
                None => self.write_content(node, out),
            },
            SemanticType::Heading => {
                let level = heading_level(node.props.get("level").and_then(|l| l.as_u64()), 1);
                let _ = write!(out, "<h{level}>");
                self.write_content(node, out);
                let _ = write!(out, "</h{level}>");
            }
            _ => match element_tag(semantic, node) {
                Some(tag) => {
                    let _ = write!(out, "<{tag}>");
                    self.write_content(node, out);
                    let _ = write!(out, "</{tag}>");
                }
                None => self.write_content(node, out),
            },
        }
    }
}

impl XmlRenderer {
    /// `<collapsed name="…" group="…">` around the child blocks forced to
    /// text, or around its text, as the reference writes it.
    fn write_collapsed(&self, block: &Block, out: &mut String) {
        let Some(collapsed) = block.as_collapsed() else {
            return;
        };
        out.push_str("<collapsed");
        write_attribute(out, "name", Some(collapsed.name));
        write_attribute(out, "group", collapsed.group.filter(|g| !g.is_empty()));
        out.push('>');
        if collapsed.child_blocks.is_empty() {
            escape(collapsed.text, out);
        } else {
            write_text(collapsed.child_blocks, self, out);
        }
        out.push_str("</collapsed>");
    }

    /// A node's content: its children (each maybe in its own renderer),
    /// else its text.
    fn write_content(&self, node: &Node, out: &mut String) {
        if node.children.is_empty() {
            escape(node.text.as_deref().unwrap_or_default(), out);
        } else {
            for child in &node.children {
                self.write_subtree(child, out);
            }
        }
    }

    /// A subtree; one that names another renderer is written by it and
    /// escaped here, so its markup is this element's text.
    fn write_subtree(&self, node: &Node, out: &mut String) {
        match node.renderer {
            Some(format) if format != ContentFormat::Xml => {
                let mut foreign = String::new();
                format.renderer().write_node(node, &mut foreign);
                escape(&foreign, out);
            }
            _ => self.write_node(node, out),
        }
    }

    /// A text block: its tree or its text, in the block's shape.
    fn write_text_block(
        &self,
        text: &str,
        node: Option<&Node>,
        semantic: Option<&Semantic>,
        out: &mut String,
    ) {
        let structure = semantic.and_then(|s| s.structure.as_ref());
        match (structure, node) {
            (Some(Structure::List(list)), _) => return write_list(list, out),
            (Some(Structure::Table(table)), _) => return write_table(table, out),
            _ => {}
        }
        let mut content = String::new();
        match node {
            Some(node) => self.write_subtree(node, &mut content),
            None => escape(text, &mut content),
        }
        let Some(semantic) = semantic else {
            return out.push_str(&content);
        };
        self.wrap_block(semantic, node.is_some(), &content, out);
    }

    /// `content` in the element of a block's `semantic`.
    fn wrap_block(&self, semantic: &Semantic, from_tree: bool, content: &str, out: &mut String) {
        let open_close = |out: &mut String, tag: &str| {
            let _ = write!(out, "<{tag}>{content}</{tag}>");
        };
        match semantic.kind {
            SemanticType::Heading => {
                let default = if from_tree { 1 } else { 2 };
                let level = heading_level(semantic.level.map(u64::from), default);
                open_close(out, &format!("h{level}"));
            }
            SemanticType::LineBreak => out.push_str("<br/>"),
            SemanticType::HorizontalRule => out.push_str("<hr/>"),
            SemanticType::Link => match semantic.href.as_deref().filter(|h| !h.is_empty()) {
                Some(href) => {
                    out.push_str("<a");
                    write_attribute(out, "href", Some(href));
                    let _ = write!(out, ">{content}</a>");
                }
                None => out.push_str(content),
            },
            // The tree already wrapped its own inline elements; a custom
            // block's renderer tag is not ours to write (the reference
            // shows its text alone).
            kind if from_tree && kind != SemanticType::Paragraph => out.push_str(content),
            SemanticType::Custom => out.push_str(content),
            kind => match element_tag(kind, &Node::default()) {
                Some(tag) => open_close(out, tag),
                None => out.push_str(content),
            },
        }
    }
}

/// The element a semantic type is written as, when it is one element
/// around its content.
fn element_tag(semantic: SemanticType, node: &Node) -> Option<&str> {
    Some(match semantic {
        SemanticType::Strong => "strong",
        SemanticType::Em => "em",
        SemanticType::Mark => "mark",
        SemanticType::Underline => "u",
        SemanticType::Strikethrough => "s",
        SemanticType::Subscript => "sub",
        SemanticType::Superscript => "sup",
        SemanticType::Small => "small",
        SemanticType::Code => "code",
        SemanticType::Paragraph => "p",
        SemanticType::Blockquote => "blockquote",
        SemanticType::Preformatted => "pre",
        SemanticType::Quote => "q",
        SemanticType::Citation => "cite",
        SemanticType::Keyboard => "kbd",
        SemanticType::Variable => "var",
        SemanticType::Custom => custom_tag(node),
        _ => return None,
    })
}

/// A custom node's tag (`_tagName`, else `rendererTag`), when it is an
/// XML name; `span` otherwise, so no property can write markup.
fn custom_tag(node: &Node) -> &str {
    node.prop("_tagName")
        .or_else(|| node.prop("rendererTag"))
        .filter(|tag| xml::is_name(tag))
        .unwrap_or("span")
}

/// A heading level from 1 to 6.
fn heading_level(level: Option<u64>, default: u64) -> u64 {
    level.unwrap_or(default).clamp(1, 6)
}

fn write_code(language: Option<&str>, text: &str, out: &mut String) {
    out.push_str("<pre><code");
    if let Some(language) = language.filter(|l| !l.is_empty()) {
        write_attribute(out, "class", Some(&format!("language-{language}")));
    }
    out.push('>');
    escape(text, out);
    out.push_str("</code></pre>");
}

fn write_media(tag: &str, media: &Media, out: &mut String) {
    let _ = write!(out, "<{tag}");
    write_attribute(out, "src", Some(&media.source.href()));
    if tag == "img" {
        write_attribute(
            out,
            "alt",
            Some(media.alt_text.as_deref().unwrap_or_default()),
        );
    }
    out.push_str(" />");
}

fn non_empty(value: Option<&str>) -> Option<&str> {
    value.filter(|v| !v.is_empty())
}

/// An action without a description, described from its fields: `user
/// checkout on cart`.
fn describe_action(action: &str, actor: Option<&str>, target: Option<&str>) -> String {
    let mut words: Vec<String> = Vec::with_capacity(3);
    words.extend(actor.map(str::to_owned));
    words.push(action.to_owned());
    words.extend(target.map(|t| format!("on {t}")));
    words.join(" ")
}

fn write_list(list: &List, out: &mut String) {
    let tag = if list.ordered { "ol" } else { "ul" };
    let _ = write!(out, "<{tag}");
    if list.task {
        out.push_str(" class=\"task-list\"");
    }
    out.push('>');
    for item in &list.items {
        out.push_str("\n  <li");
        if list.task {
            out.push_str(" class=\"task-list-item\"><input type=\"checkbox\"");
            if item.checked() {
                out.push_str(" checked=\"checked\"");
            }
            out.push_str(" disabled=\"disabled\" />");
        } else {
            out.push('>');
        }
        escape(item.text(), out);
        if let Some(nested) = item.nested() {
            out.push('\n');
            write_list(nested, out);
        }
        out.push_str("</li>");
    }
    let _ = write!(out, "\n</{tag}>");
}

fn write_table(table: &Table, out: &mut String) {
    out.push_str("<table>");
    if !table.headers.is_empty() {
        out.push_str("\n  <thead>");
        write_row(table, &table.headers, "th", out);
        out.push_str("\n  </thead>");
    }
    if !table.rows.is_empty() {
        out.push_str("\n  <tbody>");
        for row in &table.rows {
            write_row(table, row, "td", out);
        }
        out.push_str("\n  </tbody>");
    }
    out.push_str("\n</table>");
}

fn write_row(table: &Table, cells: &[String], tag: &str, out: &mut String) {
    out.push_str("\n    <tr>");
    for (column, cell) in cells.iter().enumerate() {
        let _ = write!(out, "\n      <{tag}");
        match table.alignments.get(column).copied().unwrap_or_default() {
            Alignment::Left => {}
            Alignment::Center => out.push_str(" style=\"text-align: center\""),
            Alignment::Right => out.push_str(" style=\"text-align: right\""),
        }
        out.push('>');
        escape(cell, out);
        let _ = write!(out, "</{tag}>");
    }
    out.push_str("\n    </tr>");
}

/// ` name="value"` with the value escaped; nothing when `value` is `None`.
fn write_attribute(out: &mut String, name: &str, value: Option<&str>) {
    let Some(value) = value else { return };
    let _ = write!(out, " {name}=\"");
    let escapes = Escapes {
        gt: true,
        ..Escapes::ATTRIBUTE
    };
    xml::escape(value, escapes, out);
    out.push('"');
}

/// Appends `text` escaped: `&`, `<`, `>`, `"` as entities, a carriage
/// return as a character reference (a parser would drop it), and a
/// character XML cannot hold as U+FFFD.
fn escape(text: &str, out: &mut String) {
    xml::escape(text, Escapes::QUOTED_TEXT, out);
}
