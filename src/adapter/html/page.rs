//! The page every HTML view is written into: one self-contained file
//! (inline CSS and SVG, no script, no fetch: a Content-Security-Policy
//! forbids both), readable in dark mode and printed; and the escaping
//! every string from the input goes through.

use std::fmt::Write;

/// A page being written: its body, then [`finish`](Page::finish) wraps it.
pub(super) struct Page {
    title: String,
    pub(super) body: String,
}

impl Page {
    /// An empty page titled `title` (escaped when written).
    pub(super) fn new(title: String) -> Self {
        Page {
            title,
            body: String::with_capacity(64 * 1024),
        }
    }

    /// The whole document.
    pub(super) fn finish(self) -> String {
        let mut out = String::with_capacity(self.body.len() + STYLE.len() + 1024);
        out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
        // Nothing runs and nothing loads: a chunk that smuggled markup
        // past the escaping could still do nothing.
        out.push_str(
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
             style-src 'unsafe-inline'; img-src data:\">\n",
        );
        out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
        out.push_str("<meta name=\"color-scheme\" content=\"light dark\">\n");
        let _ = writeln!(out, "<title>{}</title>", escape(&self.title));
        let _ = writeln!(out, "<style>{STYLE}</style>\n</head>\n<body>");
        out.push_str(&self.body);
        out.push_str("</body>\n</html>\n");
        out
    }
}

/// `text` made safe in HTML text and in a quoted attribute: `&`, `<`,
/// `>`, `"` and `'` as references.
pub(super) fn escape(text: &str) -> std::borrow::Cow<'_, str> {
    let special = |c: char| matches!(c, '&' | '<' | '>' | '"' | '\'');
    let Some(first) = text.find(special) else {
        return std::borrow::Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len() + 16);
    out.push_str(&text[..first]);
    for c in text[first..].chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// A list of figures, each named by its `data-fact`, in a `<dl>` whose
/// start tag carries `attributes` (written as they are).
pub(super) fn write_facts(out: &mut String, attributes: &str, facts: &[(&str, String)]) {
    let _ = writeln!(out, "<dl class=\"facts\"{attributes}>");
    for (name, value) in facts {
        let _ = writeln!(
            out,
            "<div><dt>{name}</dt><dd data-fact=\"{name}\">{value}</dd></div>"
        );
    }
    out.push_str("</dl>\n");
}

/// `tokens` with thousands separated: `12,345`.
pub(super) fn grouped(tokens: usize) -> String {
    let digits = tokens.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `part` as a percentage of `whole`, one decimal.
pub(super) fn percent(part: usize, whole: usize) -> String {
    format!("{:.1}%", part as f64 * 100.0 / whole.max(1) as f64)
}

/// The page's style: light and dark palettes, the bars' colours by class,
/// and print rules.
const STYLE: &str = r#"
:root{--bg:#fff;--fg:#1b1f24;--muted:#57606a;--line:#d0d7de;--panel:#f6f8fa;
--system:#8250df;--agent:#0969da;--workflow:#bf8700;--delegation:#1a7f37;--environment:#cf222e;
--thinking:#6e7781;--output:#0550ae;--compaction:#953800;--outside:#afb8c1;--free:#eaeef2;--reserve:#57606a;
--kept:#1a7f37;--truncated:#bf8700;--stubbed:#cf222e}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--muted:#8d96a0;--line:#30363d;
--panel:#161b22;--system:#a371f7;--agent:#4493f8;--workflow:#d29922;--delegation:#3fb950;
--environment:#f85149;--thinking:#8d96a0;--output:#79c0ff;--compaction:#db6d28;--outside:#484f58;
--free:#21262d;--reserve:#8d96a0;--kept:#3fb950;--truncated:#d29922;--stubbed:#f85149}}
body{background:var(--bg);color:var(--fg);font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.5rem auto;max-width:1200px;padding:0 1rem}
h1{font-size:1.4rem;margin:.2rem 0}h2{font-size:1.1rem;margin:1.6rem 0 .5rem;border-bottom:1px solid var(--line)}
code,pre,td.id{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
pre{white-space:pre-wrap;word-break:break-word;background:var(--panel);padding:.5rem;margin:.3rem 0;border:1px solid var(--line);max-height:30rem;overflow:auto}
dl.facts{display:grid;grid-template-columns:repeat(auto-fill,minmax(12rem,1fr));gap:.3rem 1rem;margin:.6rem 0}
dl.facts div{background:var(--panel);border:1px solid var(--line);padding:.3rem .5rem}
dt{color:var(--muted);font-size:12px}dd{margin:0;font-weight:600}
svg.bar{width:100%;height:28px;display:block;border:1px solid var(--line)}
table{border-collapse:collapse;width:100%;margin:.3rem 0}
th,td{text-align:left;padding:.15rem .4rem;border-bottom:1px solid var(--line);vertical-align:top}
th{color:var(--muted);font-weight:600;font-size:12px}td.n{text-align:right;font-variant-numeric:tabular-nums}
.sw{display:inline-block;width:.8em;height:.8em;margin-right:.4em;vertical-align:-.05em}
tr.m td{background:var(--panel);font-weight:600}
table.chunks,table.chunks table{table-layout:fixed;width:100%}table.chunks table{margin:0}
tr.gone>td{padding:0}details.gone>summary{padding:.15rem .4rem}
col:nth-child(1){width:3%}col:nth-child(2){width:10%}col:nth-child(3){width:9%}col:nth-child(4){width:11%}
col:nth-child(5){width:6%}col:nth-child(6){width:6%}col:nth-child(7){width:7%}col:nth-child(8){width:11%}
col:nth-child(9){width:9%}col:nth-child(10){width:7%}col:nth-child(11){width:5%}col:nth-child(12){width:16%}
table.chunks td,table.chunks th{overflow-wrap:anywhere}
table.chunks td:nth-child(1),table.chunks td:nth-child(5),table.chunks td:nth-child(6),
table.chunks th:nth-child(1),table.chunks th:nth-child(5),table.chunks th:nth-child(6),
table.legend th:nth-child(n+2),table.breaks th:nth-child(-n+5),table.breaks th:nth-child(8){text-align:right;font-variant-numeric:tabular-nums}
table.chunks tr.m>td,table.chunks tr.gone>td{text-align:left}
table.chunks td:nth-child(2){font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
p.cut{color:var(--muted);font-style:italic;margin:0}
tr.dropped td{color:var(--muted)}
details>summary{cursor:pointer;color:var(--muted)}
.note{border-left:4px solid var(--compaction);background:var(--panel);padding:.4rem .6rem;margin:.4rem 0}
.warn{border-left-color:var(--stubbed)}.ok{border-left-color:var(--kept)}
.k-system{fill:var(--system);background:var(--system)}.k-agent{fill:var(--agent);background:var(--agent)}
.k-workflow{fill:var(--workflow);background:var(--workflow)}.k-delegation{fill:var(--delegation);background:var(--delegation)}
.k-environment{fill:var(--environment);background:var(--environment)}.k-thinking{fill:var(--thinking);background:var(--thinking)}
.k-output{fill:var(--output);background:var(--output)}.k-compaction{fill:var(--compaction);background:var(--compaction)}
.k-outside{fill:var(--outside);background:var(--outside)}.k-free{fill:var(--free);background:var(--free)}
.k-reserve{fill:var(--reserve);background:var(--reserve)}.k-kept{fill:var(--kept);background:var(--kept)}
.k-truncated{fill:var(--truncated);background:var(--truncated)}.k-stubbed{fill:var(--stubbed);background:var(--stubbed)}
svg.chart{width:100%;height:auto;border:1px solid var(--line);background:var(--bg)}
svg.chart text{fill:var(--muted);font-size:11px}
.l-prompt{stroke:var(--agent);fill:none;stroke-width:1.5}.l-budget{stroke:var(--stubbed);stroke-dasharray:6 4;fill:none}
.l-low{stroke:var(--truncated);stroke-dasharray:2 3;fill:none}.l-stable{fill:var(--kept);fill-opacity:.25;stroke:var(--kept)}
.l-axis{stroke:var(--line)}.break{fill:var(--stubbed)}
@media print{body{max-width:none;margin:0;font-size:11px}pre{max-height:none;overflow:visible}
svg.bar,svg.chart,.sw{print-color-adjust:exact;-webkit-print-color-adjust:exact}}
"#;
