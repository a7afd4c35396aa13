//! Legacy structures: lists and tables, as Markdown or fenced text.

use super::buf::{Buf, Newline};
use super::ctx::Ctx;
use super::literal::push_fence;
use super::{Flavor, MarkdownRenderer};
use crate::content::block::{Alignment, List, Table};

impl MarkdownRenderer {
    /// A legacy list, nested lists indented to their item's content column.
    pub(super) fn list(&self, list: &List, indent: usize, buf: &mut Buf) {
        for (index, item) in list.items.iter().enumerate() {
            let checkbox = match (list.task, self.flavor, item.checked()) {
                (false, ..) => "",
                (true, Flavor::Gfm, true) => "[x] ",
                (true, Flavor::Gfm, false) => "[ ] ",
                (true, Flavor::CommonMark, true) => "✓ ",
                (true, Flavor::CommonMark, false) => "○ ",
            };
            let mut body = Buf::new(!checkbox.is_empty());
            self.push_text(&mut body, item.text(), Ctx::new(Newline::Line));
            body.trim_end();
            let text = body.finish(Some(' '), None);
            let text = text.trim_start_matches([' ', '\t', '\n']);
            let marker = if list.ordered {
                format!("{}.", index + 1)
            } else {
                "-".to_owned()
            };
            push_item(buf, indent, &marker, &format!("{checkbox}{text}"));
            // An empty task keeps the space after its box: `- [ ]` is text.
            buf.floor = buf.text.len();
            let Some(nested) = item.nested() else {
                continue;
            };
            // An empty first item cannot interrupt a paragraph (`-` would
            // underline it): a blank line first. A GFM box alone is none.
            let paragraph = !text.is_empty() || (list.task && self.flavor == Flavor::CommonMark);
            let empty = nested
                .items
                .first()
                .is_some_and(|i| i.text().trim().is_empty());
            if paragraph && empty && !nested.task {
                buf.text.push_str("\n\n");
            }
            self.list(nested, indent + marker.len() + 1, buf);
        }
    }

    /// A padded, aligned table: GFM's, or its text fenced in CommonMark.
    pub(super) fn table(&self, table: &Table, buf: &mut Buf) {
        let columns = table
            .rows
            .iter()
            .map(Vec::len)
            .fold(table.headers.len(), usize::max);
        if columns == 0 {
            return;
        }
        let cells = |row: &[String]| -> Vec<String> {
            (0..columns)
                .map(|i| self.cell(row.get(i).map_or("", String::as_str)))
                .collect()
        };
        let rows: Vec<Vec<String>> = std::iter::once(&table.headers)
            .chain(&table.rows)
            .map(|row| cells(row))
            .collect();
        let aligns: Vec<Alignment> = (0..columns)
            .map(|i| table.alignments.get(i).copied().unwrap_or_default())
            .collect();
        let widths: Vec<usize> = (0..columns)
            .map(|i| {
                rows.iter()
                    .map(|row| row[i].chars().count())
                    .fold(3, usize::max)
            })
            .collect();
        let rule = |(&width, &align): (&usize, &Alignment)| match align {
            Alignment::Left => "-".repeat(width),
            Alignment::Center => format!(":{}:", "-".repeat(width - 2)),
            Alignment::Right => format!("{}:", "-".repeat(width - 1)),
        };
        let rules: Vec<String> = widths.iter().zip(&aligns).map(rule).collect();
        let mut lines = vec![
            table_row(&rows[0], &widths, &aligns),
            format!("| {} |", rules.join(" | ")),
        ];
        lines.extend(rows[1..].iter().map(|row| table_row(row, &widths, &aligns)));
        match self.flavor {
            Flavor::Gfm => buf.text.push_str(&lines.join("\n")),
            Flavor::CommonMark => push_fence(buf, None, &lines.join("\n")),
        }
    }

    /// A cell: escaped Markdown on one line in GFM; in CommonMark's fenced
    /// table, only what would split the row or the line.
    fn cell(&self, text: &str) -> String {
        if self.flavor == Flavor::Gfm {
            return self
                .inline_text(text, Ctx::new(Newline::Br))
                .trim()
                .to_owned();
        }
        let text = text.trim().replace('\\', "\\\\").replace('|', "\\|");
        text.replace("\r\n", "\\n").replace(['\r', '\n'], "\\n")
    }
}

/// One list item, its further lines indented to the content column so that
/// they stay in it.
fn push_item(buf: &mut Buf, indent: usize, marker: &str, text: &str) {
    if !buf.text.is_empty() && !buf.text.ends_with('\n') {
        buf.text.push('\n');
    }
    buf.text
        .push_str(&format!("{}{marker}", " ".repeat(indent)));
    let column = " ".repeat(indent + marker.len() + 1);
    for (index, line) in text.split('\n').enumerate() {
        match (index, line.is_empty()) {
            (0, false) => buf.text.push(' '),
            (0, true) | (_, true) => {}
            (_, false) => buf.text.push_str(&column),
        }
        buf.text.push_str(line);
        buf.text.push('\n');
    }
    buf.text.pop();
}

fn table_row(cells: &[String], widths: &[usize], aligns: &[Alignment]) -> String {
    let mut line = String::from("|");
    for ((cell, &width), &align) in cells.iter().zip(widths).zip(aligns) {
        let room = width.saturating_sub(cell.chars().count());
        let (left, right) = match align {
            Alignment::Left => (0, room),
            Alignment::Right => (room, 0),
            Alignment::Center => (room / 2, room - room / 2),
        };
        line.push_str(&format!(
            " {}{cell}{} |",
            " ".repeat(left),
            " ".repeat(right)
        ));
    }
    line
}
