//! The HTML pages (`--html`, `adapter::html`) read without a browser: a
//! hostile session's ids, texts, tool names and system prompt come out
//! escaped, never as markup; every chunk has its row, named by its
//! escaped id; the figures the page carries are the build's.

use agent_context::adapter::html::{ReplayTurn, replay_page, window_page};
use agent_context::fragment::hint;
use agent_context::{
    BuildResult, ChunkKind, ContextBuilder, ContextSession, MemoryChunk, MemoryState, Role,
};
use serde_json::json;

/// `text` escaped for HTML text and quoted attributes, written here
/// rather than taken from the library.
fn escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Markup a chunk could try to smuggle in: a script, an end to the page's
/// style, an attribute broken out of with an image that runs code, an
/// end to the row's text and its fold.
const SCRIPT: &str = "<script>alert(1)</script>";
const STYLE_END: &str = "</style><b>bold</b>";
const ATTRIBUTE: &str = "\"><img src=x onerror=alert(2)>";
const FOLD_END: &str = "</pre></details></td></tr></table>";

/// A session every string of which tries one of the injections: its
/// system prompt and fragment, a system chunk, the user's message, old
/// tool steps large enough that the budget drops or stubs some (so their
/// rows sit folded, without text), thinking and the answer.
fn hostile_steps() -> (MemoryState, Vec<Vec<MemoryChunk>>) {
    let opening = MemoryState::new()
        .with_system_prompt(format!("Be careful. {FOLD_END}{SCRIPT}"))
        .with_fragment(hint(format!("{STYLE_END}{ATTRIBUTE}")))
        .with_chunk(
            MemoryChunk::new(format!("sys{SCRIPT}"), ChunkKind::System)
                .with_text(format!("rule {FOLD_END}")),
        )
        .with_chunk(MemoryChunk::agent(
            format!("u{ATTRIBUTE}"),
            Role::User,
            format!("{SCRIPT}{FOLD_END} fix it"),
        ));
    let tool = format!("{STYLE_END}{SCRIPT}");
    let mut steps = Vec::new();
    for n in 0..8 {
        let call_id = format!("k{n}'{ATTRIBUTE}");
        let mut step = vec![
            MemoryChunk::new(format!("t{n}'{STYLE_END}"), ChunkKind::Thinking)
                .with_text(format!("thinking {STYLE_END}{ATTRIBUTE}")),
            MemoryChunk::new(format!("w{n}{FOLD_END}"), ChunkKind::Workflow)
                .with_tool(tool.clone())
                .with_call_id(call_id.clone())
                .with_data(json!({"cmd": ATTRIBUTE, "why": SCRIPT})),
            MemoryChunk::new(format!("r{n}&amp;{ATTRIBUTE}"), ChunkKind::Environment)
                .with_tool(tool.clone())
                .with_call_id(call_id)
                .with_text(format!("line {n} {FOLD_END}{SCRIPT}\n").repeat(40)),
        ];
        if n == 7 {
            step.push(MemoryChunk::agent(
                format!("a{n}{SCRIPT}"),
                Role::Assistant,
                format!("done </section></body>{SCRIPT}"),
            ));
        }
        steps.push(step);
    }
    (opening, steps)
}

fn builder() -> ContextBuilder {
    crate::common::gpt_4o(3_000, 400)
}

/// How often `needle` occurs in `page`.
fn count(page: &str, needle: &str) -> usize {
    page.matches(needle).count()
}

/// The page holds none of the injected markup as markup: no script, image
/// or bold element; one style element; every element the page opens
/// closed as often (but cells, whose end tags the chunk rows leave out, as
/// HTML allows: the content's `</td>` would show as an extra one); the
/// Content-Security-Policy that forbids scripts.
fn assert_no_markup_injected(page: &str) {
    let lower = page.to_ascii_lowercase();
    for tag in ["<script", "<img", "<b>"] {
        assert_eq!(count(&lower, tag), 0, "{tag} in the page");
    }
    assert_eq!((count(page, "<style>"), count(page, "</style>")), (1, 1));
    for (open, close) in [
        ("<pre>", "</pre>"),
        ("<details", "</details>"),
        ("<table", "</table>"),
        ("<tr", "</tr>"),
        ("<section", "</section>"),
        ("<body>", "</body>"),
    ] {
        assert_eq!(
            count(page, open),
            count(page, close),
            "{open} against {close}"
        );
    }
    // A chunk row opens 12 cells and closes none.
    let unclosed = 12 * count(page, "data-chunk=");
    assert_eq!(
        count(page, "</td>") + unclosed,
        count(page, "<td"),
        "<td against </td>"
    );
    assert!(page.contains("default-src 'none'"), "no CSP");
}

/// Every chunk of `result` has its row, named by its id escaped.
fn assert_rows_named(page: &str, result: &BuildResult) {
    for decision in &result.decisions {
        let attribute = format!("data-chunk=\"{}\"", escaped(&decision.id));
        assert_eq!(count(page, &attribute), 1, "{attribute}");
    }
}

/// A hostile session's window page shows every id, text and tool name as
/// text: no markup of theirs gets in, and every chunk's row is named by
/// its escaped id, the rows of chunks left out as well.
#[test]
fn a_hostile_window_page_shows_markup_as_text() {
    let (opening, steps) = hostile_steps();
    let mut state = opening;
    state.chunks.extend(steps.into_iter().flatten());
    let result = builder().build(&state).unwrap();
    assert!(result.excluded().count() > 0, "some rows sit folded");
    let page = window_page(&result, Some(&state));
    assert_no_markup_injected(&page);
    assert_rows_named(&page, &result);
    for text in [SCRIPT, STYLE_END, ATTRIBUTE, FOLD_END] {
        assert!(page.contains(&escaped(text)), "{text} shown as text");
    }
    let tool = escaped(&format!("{STYLE_END}{SCRIPT}"));
    assert!(page.contains(&format!(" / {tool}<td>")), "the tool name");
    // Without the input the rows still stand.
    let bare = window_page(&result, None);
    assert_no_markup_injected(&bare);
    assert_rows_named(&bare, &result);
}

/// A hostile session replayed turn by turn: its page escapes the breaks'
/// chunk ids and the last window alike, lists one row per turn whose
/// prefix broke with its cause, and counts them in `data-breaks`.
#[test]
fn a_hostile_replay_page_shows_markup_as_text_and_every_break() {
    let (opening, steps) = hostile_steps();
    let mut session = ContextSession::new(builder(), opening).unwrap();
    let mut turns = Vec::new();
    let mut last = None;
    for (n, step) in steps.into_iter().enumerate() {
        session.extend(step).unwrap();
        let result = session.build().unwrap();
        turns.push(ReplayTurn::of(
            n + 1,
            session.state().chunks.len(),
            &result,
            0.8,
        ));
        last = Some(result);
    }
    let last = last.unwrap();
    let page = replay_page(&turns, Some((&last, session.state())));
    assert_no_markup_injected(&page);
    assert_rows_named(&page, &last);
    let broken: Vec<_> = (turns.iter())
        .filter_map(|t| Some((t.turn, t.cache.as_ref()?.broke_at.as_ref()?)))
        .collect();
    assert!(!broken.is_empty(), "the budget refills");
    assert!(page.contains(&format!("data-breaks=\"{}\"", broken.len())));
    assert_eq!(count(&page, "<tr data-turn="), broken.len());
    for (turn, broke) in broken {
        let row = format!(
            "<tr data-turn=\"{turn}\" data-cause=\"{}\">",
            broke.cause.as_str()
        );
        assert!(page.contains(&row), "{row}");
        if let Some(chunk) = &broke.chunk {
            let cell = format!("<td class=\"id\">{}</td>", escaped(chunk));
            assert!(page.contains(&cell), "{cell}");
        }
    }
}

/// The value of attribute `name` in the first tag of `page` that starts
/// with `opening`.
fn attribute<'p>(page: &'p str, opening: &str, name: &str) -> &'p str {
    let start = page.find(opening).unwrap_or_else(|| panic!("no {opening}"));
    let tag = &page[start..start + page[start..].find('>').unwrap()];
    let key = format!(" {name}=\"");
    let at = tag
        .find(&key)
        .unwrap_or_else(|| panic!("no {name} in {tag}"))
        + key.len();
    &tag[at..at + tag[at..].find('"').unwrap()]
}

/// The window page's section carries the build's figures, each legend's
/// `free` and `reserve` rows the free space (budget less the prompt) and
/// the reserve, and each legend's rows add up to `max_tokens`.
#[test]
fn the_window_pages_figures_are_the_builds() {
    let (opening, steps) = hostile_steps();
    let mut state = opening;
    state.chunks.extend(steps.into_iter().flatten().take(9));
    let mut builder = builder();
    builder.max_tokens(40_000).reserve_output(1_234);
    let result = builder.build(&state).unwrap();
    let page = window_page(&result, Some(&state));
    let section = "<section class=\"window\"";
    for (name, value) in [
        ("data-token-count", result.token_count),
        ("data-budget", result.budget),
        ("data-max-tokens", result.max_tokens),
        ("data-reserve", result.reserve_output),
        ("data-decisions", result.decisions.len()),
    ] {
        assert_eq!(attribute(&page, section, name), value.to_string(), "{name}");
    }
    let free = result.budget - result.token_count;
    assert!(free > 0 && result.reserve_output > 0);
    let legends: Vec<&str> = page.split("<table class=\"legend\">").skip(1).collect();
    assert_eq!(legends.len(), 2, "by kind and by decision");
    for legend in legends {
        let legend = &legend[..legend.find("</table>").unwrap()];
        let row = |segment: &str| {
            attribute(
                legend,
                &format!("<tr data-segment=\"{segment}\""),
                "data-tokens",
            )
        };
        assert_eq!(row("free"), free.to_string());
        assert_eq!(row("reserve"), result.reserve_output.to_string());
        let total: usize = (legend.split("data-tokens=\"").skip(1))
            .map(|rest| rest[..rest.find('"').unwrap()].parse::<usize>().unwrap())
            .sum();
        assert_eq!(total, result.max_tokens);
    }
}

/// A window whose texts would not fit a 5 MB page beside its rows shows
/// the long ones as a head and a tail, saying what it left out, and the
/// page stays under 5 MB; a smaller window's texts are whole.
#[test]
fn a_window_too_large_for_the_page_cuts_its_long_texts() {
    // 60 notes of 120 KB each: 7.2 MB of text, all kept.
    let mut state = MemoryState::new();
    for n in 0..60 {
        let text = format!("note {n}: ") + &"the cache key omitted the model. ".repeat(3_700);
        state = state.with_chunk(MemoryChunk::agent(format!("n{n}"), Role::User, text));
    }
    let mut large = ContextBuilder::new();
    large.model("gpt-4o").max_tokens(4_000_000);
    let result = large.build(&state).unwrap();
    assert_eq!(result.excluded().count(), 0, "every note is kept");
    let page = window_page(&result, Some(&state));
    assert!(page.len() < 5_000_000, "{} bytes", page.len());
    assert_eq!(
        count(&page, "bytes not shown]"),
        60,
        "every long text is cut"
    );
    // The same notes, a tenth of the count: their 720 KB fit whole.
    state.chunks.truncate(6);
    let small = window_page(&large.build(&state).unwrap(), Some(&state));
    assert_eq!(
        count(&small, "bytes not shown]"),
        0,
        "a smaller window shows them whole"
    );
}
