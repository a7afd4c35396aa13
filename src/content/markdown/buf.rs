//! The Markdown being written ([`Buf`]) and what a newline in text becomes
//! ([`Newline`]).

use super::emphasis::{Emph, escaped, run_is};

/// What a newline in text becomes: what the construct around it allows.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Newline {
    /// A newline; a blank line ends a paragraph, and blocks may open.
    Paragraph,
    /// A newline, never a blank line.
    Line,
    Space,
    /// `<br>`, in a GFM table cell.
    Br,
}

/// Markdown being written, with the emphasis in it whose delimiters are
/// checked once their neighbours are known ([`Buf::finish`]).
pub(super) struct Buf {
    pub(super) text: String,
    /// Emphasis: the byte offsets of its delimiters.
    spans: Vec<(usize, usize, Emph)>,
    /// The text starts after other text on its line.
    mid_line: bool,
    /// Trimming stops here (a space that matters, a legacy newline).
    pub(super) floor: usize,
    /// The shortest the text has been trimmed to since [`Buf::guarded`]
    /// began writing a child: where what precedes the child now ends.
    lowest: usize,
}

impl Buf {
    pub(super) fn new(mid_line: bool) -> Buf {
        Buf {
            text: String::new(),
            spans: Vec::new(),
            mid_line,
            floor: 0,
            lowest: usize::MAX,
        }
    }

    /// How many digits the current line holds when it holds nothing else:
    /// `Some(0)` at a line's start, `None` after other text.
    pub(super) fn line_digits(&self) -> Option<usize> {
        let line = match self.text.rfind('\n') {
            Some(index) => &self.text[index + 1..],
            None if self.mid_line => return None,
            None => &self.text,
        };
        line.bytes()
            .all(|b| b.is_ascii_digit())
            .then_some(line.len())
    }

    fn at_line_start(&self) -> bool {
        self.line_digits() == Some(0)
    }

    /// `count` newlines of text as `mode` writes them; none at the start.
    pub(super) fn newline(&mut self, count: usize, mode: Newline) {
        if self.text.is_empty() && !self.mid_line {
            return;
        }
        match mode {
            Newline::Paragraph if count > 1 => self.block_break(),
            Newline::Paragraph | Newline::Line if !self.at_line_start() => {
                // Two spaces before a newline would be a hard break.
                let end = self.text.trim_end_matches([' ', '\t']).len();
                self.cut_to(end);
                self.text.push('\n')
            }
            Newline::Paragraph | Newline::Line => {}
            Newline::Space => self.text.push(' '),
            Newline::Br => self.text.push_str("<br>"),
        }
    }

    pub(super) fn hard_break(&mut self, mode: Newline) {
        match mode {
            Newline::Space => self.text.push(' '),
            Newline::Br => self.text.push_str("<br>"),
            _ if !self.at_line_start() => self.text.push_str("  \n"),
            _ => {}
        }
    }

    /// Drops trailing spaces and newlines, as Markdown would; other
    /// whitespace is text (`---` before a no-break space is no rule).
    pub(super) fn trim_end(&mut self) {
        let end = self.text.trim_end_matches([' ', '\t', '\n']).len();
        self.cut_to(end);
    }

    /// Drops the text from `end` on (never below the floor).
    fn cut_to(&mut self, end: usize) {
        let end = end.max(self.floor);
        if end < self.text.len() {
            self.text.truncate(end);
            self.lowest = self.lowest.min(end);
        }
    }

    /// Writes a child with `write`, kept from joining what precedes it
    /// ([`Buf::guard`]) where it now meets it: writing may have trimmed
    /// trailing whitespace from the text before it.
    pub(super) fn guarded(&mut self, write: impl FnOnce(&mut Buf)) {
        let start = self.text.len();
        let outer = std::mem::replace(&mut self.lowest, start);
        write(self);
        let meets = self.lowest.min(start);
        self.lowest = outer.min(self.lowest);
        self.guard(meets);
    }

    /// Ends the block with a blank line (none at the start). Appends only,
    /// so that offsets taken before stay valid.
    pub(super) fn block_break(&mut self) {
        if !self.text.is_empty() {
            let newlines = self.text.len() - self.text.trim_end_matches('\n').len();
            (newlines..2).for_each(|_| self.text.push('\n'));
        }
    }

    /// `inner` between `open` and `close`, its edges' whitespace moved
    /// outside (a delimiter next to a space does not open or close);
    /// nothing around an empty inner.
    pub(super) fn wrap(&mut self, inner: Buf, open: &str, close: &str, emph: Option<Emph>) {
        let start = inner.text.len() - inner.text.trim_start().len();
        let end = inner.text.trim_end().len().max(start);
        self.push_space(&inner.text[..start]);
        if start < end {
            let open_at = self.text.len();
            let shift = open_at + open.len();
            self.text
                .push_str(&format!("{open}{}", &inner.text[start..end]));
            let spans = inner
                .spans
                .iter()
                .map(|&(o, c, e)| (o + shift - start, c + shift - start, e));
            self.spans.extend(spans);
            let close_at = self.text.len();
            self.spans
                .extend(emph.map(|emph| (open_at, close_at, emph)));
            self.text.push_str(close);
        }
        self.push_space(&inner.text[end..]);
    }

    /// Whitespace moved out of a span; no spaces or newline at a line's
    /// start, where they would indent or end the paragraph.
    fn push_space(&mut self, space: &str) {
        for c in space.chars() {
            if !matches!(c, ' ' | '\t' | '\n') || !self.at_line_start() {
                self.text.push(c);
            }
        }
    }

    /// Keeps the text from `start` from joining what precedes it: into a
    /// link (`](`, `]:`, `![`) or into one backtick run (a space between).
    fn guard(&mut self, start: usize) {
        let (head, tail) = self.text.split_at(start);
        if head.ends_with('`') && tail.starts_with('`') {
            self.splice(start, 0, " ");
        } else if head.ends_with(']') && tail.starts_with(['(', ':']) {
            self.splice(start, 0, "\\");
        } else if head.ends_with('!')
            && tail.starts_with('[')
            && !escaped(head.as_bytes(), start - 1)
        {
            self.splice(start - 1, 0, "\\");
        }
    }

    /// Replaces `len` bytes at `at`, moving the spans after them.
    fn splice(&mut self, at: usize, len: usize, with: &str) {
        self.text.replace_range(at..at + len, with);
        for (open, close, _) in &mut self.spans {
            for offset in [open, close] {
                if *offset >= at + len {
                    *offset = *offset + with.len() - len;
                }
            }
        }
    }

    /// The text, every emphasis whose delimiters would not open and close
    /// where they stand (`before` and `after` the text: `None` for a line's
    /// edge) rewritten as HTML tags, until all that remain do.
    pub(super) fn finish(mut self, before: Option<char>, after: Option<char>) -> String {
        let fits = |buf: &Buf, &(open, close, emph): &(usize, usize, Emph)| {
            let len = emph.marks().0.len();
            run_is(&buf.text, (open, len), (before, after), (true, false))
                && run_is(&buf.text, (close, len), (before, after), (false, true))
        };
        while let Some(index) = self.spans.iter().position(|span| !fits(&self, span)) {
            let (open, close, emph) = self.spans.swap_remove(index);
            let (delimiter, tag) = emph.marks();
            self.splice(close, delimiter.len(), &format!("</{tag}>"));
            self.splice(open, delimiter.len(), &format!("<{tag}>"));
        }
        self.text
    }
}
