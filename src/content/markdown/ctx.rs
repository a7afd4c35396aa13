//! The context content is written in ([`Ctx`]): what a newline becomes and
//! what is open around it.

use super::buf::Newline;

/// Where content is written and what is open around it.
#[derive(Clone, Copy)]
pub(super) struct Ctx {
    pub(super) newline: Newline,
    /// The emphasis open around this point (bits of
    /// [`Emph`](super::emphasis::Emph)).
    pub(super) styles: u8,
    /// Inside brackets (a link's text, an alt text): brackets are escaped
    /// and no link opens.
    pub(super) label: bool,
    /// `&`, `<`, `>`, `"`, `'` as XML entities (read back as themselves), as
    /// the reference writes a collapsed block's text.
    pub(super) xml: bool,
}

impl Ctx {
    pub(super) fn new(newline: Newline) -> Ctx {
        Ctx {
            newline,
            styles: 0,
            label: false,
            xml: false,
        }
    }

    pub(super) fn block(self) -> bool {
        self.newline == Newline::Paragraph
    }

    pub(super) fn inline(self) -> Ctx {
        if self.block() {
            return self.with_newline(Newline::Line);
        }
        self
    }

    pub(super) fn with_newline(mut self, newline: Newline) -> Ctx {
        self.newline = newline;
        self
    }

    pub(super) fn styled(mut self, bit: u8) -> Ctx {
        self.styles |= bit;
        self.inline()
    }

    pub(super) fn labelled(mut self) -> Ctx {
        self.label = true;
        self.inline()
    }
}
