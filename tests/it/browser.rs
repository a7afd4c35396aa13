//! The `--html` pages in a real browser: headless Chromium loads each page
//! the CLI writes, and the tests read what it made of it: its console
//! (where a Content-Security-Policy violation shows), its DOM after load
//! and a screenshot. Opt in with the `browser-tests` feature and run
//! through `.ci/with-chromium`, which finds or installs Chromium and names
//! it in `AGENT_CONTEXT_CHROMIUM`; without that the tests fail, they never
//! skip:
//!
//! `.ci/with-chromium cargo test --features browser-tests --test it browser::`

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::cli::run;
use crate::common::temp::TempDir;
use crate::session_gen::{LoopShape, agent_loop};

/// The bundled data's page, built as the README's main job builds it: its
/// console is silent, and its DOM shows the JSON report of the same build
/// (every decision, the window's figures) and draws the bars.
#[test]
fn the_bundled_data_page_shows_every_decision_of_its_report() {
    let dir = TempDir::new("browser-window");
    let page = dir.join("window.html");
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/coding-agent.json");
    let report = build(&data, &page, &["--max-tokens", "4000", "--reserve", "500"]);
    let loaded = load(&page);
    assert_silent(&loaded);
    assert_page_elements_only(&loaded.dom);
    assert_window_consistent(&loaded.dom);
    assert_window_is_report(&loaded.dom, &report);
    assert_drawn(&loaded.shot, &[AGENT, WORKFLOW, FREE, RESERVE]);
}

/// Ids, texts, a tool name and a system prompt that try to close the
/// page's elements and open their own: nothing runs or logs, no element
/// they name appears, their text shows as text, and the page still shows.
#[test]
fn a_hostile_session_page_shows_markup_as_text() {
    let dir = TempDir::new("browser-hostile");
    let (session, page) = (dir.join("hostile.json"), dir.join("hostile.html"));
    let state = hostile_session();
    std::fs::write(&session, state.to_string()).unwrap();
    let report = build(
        &session,
        &page,
        &["--max-tokens", "1500", "--reserve", "300"],
    );
    let loaded = load(&page);
    assert_silent(&loaded);
    assert_page_elements_only(&loaded.dom);
    assert_markup_is_text(&loaded.dom);
    let ids: BTreeSet<String> = (state["chunks"].as_array().unwrap().iter())
        .map(|c| c["id"].as_str().unwrap().to_owned())
        .collect();
    let rows: BTreeSet<String> = (tags(&loaded.dom, "tr").into_iter())
        .filter_map(|tag| tag.attrs.get("data-chunk").cloned())
        .collect();
    assert_eq!(rows, ids, "a data-chunk row for every chunk");
    let decisions: Vec<&Value> = (report["decisions"].as_array().unwrap().iter())
        .map(|d| &d["decision"])
        .collect();
    assert!(
        decisions.iter().any(|&d| d == "dropped") && decisions.iter().any(|&d| d == "kept"),
        "some hostile chunks are dropped, some kept: {decisions:?}"
    );
    assert_window_consistent(&loaded.dom);
    assert_window_is_report(&loaded.dom, &report);
    assert_drawn(&loaded.shot, &[AGENT, FREE, RESERVE]);
}

/// An agent loop of 300 steps replayed with a small budget, so the window
/// fills and refills, then again compacting: each page charts every turn,
/// lists every turn whose prompt-cache prefix broke with its cause, and
/// ends with the last turn's window.
#[test]
fn a_long_loop_replay_page_lists_every_turn_and_every_break() {
    let dir = TempDir::new("browser-replay");
    let shape = LoopShape {
        result_bytes: (4, 6_000),
        ..LoopShape::new(300)
    };
    let session = dir.join("loop.json");
    let state = agent_loop(41, &shape).state(shape.steps);
    std::fs::write(&session, serde_json::to_string(&state).unwrap()).unwrap();
    let compacting = ["--compact-at", "0.9", "--summarizer", "first-lines"];
    thread::scope(|s| {
        let plain = s.spawn(|| check_replay(&session, &dir.join("plain.html"), &[]));
        check_replay(&session, &dir.join("compacting.html"), &compacting);
        plain.join().unwrap();
    });
}

/// Replays `session` with `flags` into `page`, and checks the page
/// against the replay's JSON lines.
fn check_replay(session: &Path, page: &Path, flags: &[&str]) {
    let replayed = replay(session, page, flags);
    let summary = &replayed.summary["summary"];
    assert!(replayed.breaks.len() >= 3, "the window refills: {summary}");
    assert_eq!(summary["prefix_changes"], replayed.breaks.len());
    let compactions = summary["compactions"].as_u64().unwrap();
    assert_eq!(compactions > 0, !flags.is_empty(), "{summary}");
    let loaded = load(page);
    assert_silent(&loaded);
    assert_page_elements_only(&loaded.dom);
    let dom = &loaded.dom;
    let facts = one(tags(dom, "dl"), |t| t.attrs.contains_key("data-turns"));
    assert_eq!(facts.attrs["data-turns"], replayed.turns.to_string());
    assert_eq!(
        facts.attrs["data-breaks"],
        replayed.breaks.len().to_string()
    );
    let compacted = one(tags(dom, "dd"), |t| t.attrs["data-fact"] == "compactions");
    assert_eq!(text_after(dom, &compacted), grouped(compactions));
    let rows: Vec<(String, String)> = (tags(dom, "tr").into_iter())
        .filter_map(|t| {
            Some((
                t.attrs.get("data-turn")?.clone(),
                t.attrs["data-cause"].clone(),
            ))
        })
        .collect();
    assert_eq!(
        rows, replayed.breaks,
        "table.breaks lists the turns that broke"
    );
    assert_eq!(dom.matches("<table class=\"breaks\"").count(), 1);
    assert_eq!(dom.matches("<svg class=\"chart\"").count(), 1);
    let dots = dom.matches("<circle class=\"break\"").count();
    assert_eq!(dots, replayed.breaks.len(), "a dot on each break");
    assert_window_consistent(dom);
    assert_drawn(&loaded.shot, &[AGENT, STUBBED, TRUNCATED, KEPT]);
}

/// What a replay printed: one JSON line per turn, then a summary.
struct Replayed {
    /// How many turn lines.
    turns: usize,
    /// The turns whose prompt-cache prefix broke (`cache.broke_at` set),
    /// with the cause.
    breaks: Vec<(String, String)>,
    /// The summary line.
    summary: Value,
}

/// Replays `session` with `flags`, writing the page `page`.
fn replay(session: &Path, page: &Path, flags: &[&str]) -> Replayed {
    let args = [
        &["replay", path_str(session), "--max-tokens", "12000"][..],
        flags,
        &["--html", path_str(page)],
    ]
    .concat();
    let replayed = run(&args, "");
    assert_eq!(replayed.code, 0, "{}", replayed.stderr);
    let mut lines: Vec<Value> = (replayed.stdout.lines())
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let summary = lines.pop().expect("a summary line");
    assert!(summary["summary"].is_object(), "{summary}");
    assert!(lines.iter().all(|t| t["turn"].is_u64()), "{flags:?}");
    let breaks = (lines.iter())
        .filter(|t| !t["cache"].is_null() && !t["cache"]["broke_at"].is_null())
        .map(|t| {
            let cause = &t["cache"]["broke_at"]["cause"];
            (t["turn"].to_string(), cause.as_str().unwrap().to_owned())
        })
        .collect();
    Replayed {
        turns: lines.len(),
        breaks,
        summary,
    }
}

/// Asserts no element of [`HOSTILE`], [`TOOL`] or [`SYSTEM_PROMPT`] made
/// it into `dom` and each shows as escaped text.
fn assert_markup_is_text(dom: &str) {
    let lower = dom.to_lowercase();
    let forbidden = [
        "<script",
        "<img",
        "<h1>forged",
        "<i>",
        "<b ",
        "<a ",
        "<svg onload",
    ];
    for forbidden in forbidden {
        assert!(!lower.contains(forbidden), "the DOM has {forbidden:?}");
    }
    assert_eq!(tags(&lower, "style").len(), 1, "one <style> element");
    let head = &lower[..lower.find("</head>").expect("a head")];
    assert_eq!(tags(head, "title").len(), 1, "one <title> in the head");
    assert_eq!(tags(&lower, "h1").len(), 1, "the page's own <h1> alone");
    for text in HOSTILE.iter().chain([&TOOL, &SYSTEM_PROMPT]) {
        let escaped = text_escaped(text);
        assert!(dom.contains(&escaped), "{escaped:?} not in the DOM");
    }
}

/// Strings that try to end the element they are written into and start
/// their own; each is a chunk id and a chunk text of the hostile session.
const HOSTILE: [&str; 7] = [
    "<script>alert(1)</script>",
    "</style><style>body{display:none}</style>",
    "\"><img src=x onerror=alert(1)>",
    "</pre></details></td></tr></table><h1>forged</h1>",
    "it's \"quoted\" & 'single' &amp; &lt;b&gt;",
    "</title></head><body><script>alert(2)</script>",
    "<svg onload=alert(5)><!-- <a href=\"javascript:alert(6)\">x</a> ]]>",
];
const TOOL: &str = "<b onmouseover=alert(3)>bash</b> & \"sh\"";
const SYSTEM_PROMPT: &str = "You are <i>careful</i> & \"terse\".</title>\
    <script>alert(4)</script><style>*{display:none}</style>";

/// A session of [`HOSTILE`] chunks: user and assistant messages, a tool
/// call and its result from [`TOOL`], and a long thought the budget drops.
fn hostile_session() -> Value {
    let mut chunks = vec![json!({
        "id": format!("old {}", HOSTILE[0]), "kind": "thinking",
        "text": format!("{} ", HOSTILE[3]).repeat(400),
    })];
    for (i, text) in HOSTILE.iter().enumerate() {
        let call_id = format!("call-{i}");
        chunks.push(
            json!({"id": format!("user {text}"), "kind": "agent", "role": "user", "text": text}),
        );
        chunks.push(json!({
            "id": format!("call {text}"), "kind": "workflow", "action": "tool_call",
            "tool": TOOL, "call_id": call_id, "data": {"command": text},
        }));
        chunks.push(json!({
            "id": text, "kind": "environment", "source": "tool", "tool": TOOL,
            "call_id": call_id, "text": format!("{text}\n{text}"),
        }));
        chunks.push(json!({"id": format!("answer {text}"), "kind": "agent", "role": "assistant", "text": text}));
    }
    json!({"id": HOSTILE[2], "system_prompt": SYSTEM_PROMPT, "chunks": chunks})
}

/// Builds `session` with `flags` and `--html page`; the JSON report.
fn build(session: &Path, page: &Path, flags: &[&str]) -> Value {
    let args = [
        &["build", path_str(session)][..],
        flags,
        &["--html", path_str(page)],
    ]
    .concat();
    let built = run(&args, "");
    assert_eq!(built.code, 0, "{}", built.stderr);
    serde_json::from_str(&built.stdout).expect("a JSON report")
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 temp path")
}

/// A page as headless Chromium saw it.
struct Loaded {
    /// The DOM after load, as Chromium serializes it.
    dom: String,
    /// What the page logged (Chromium's `CONSOLE` lines), CSP violations
    /// among them.
    console: Vec<String>,
    /// The top of the page, 1280 px wide.
    shot: Image,
}

/// Loads `page` in headless Chromium, which dumps the DOM and takes a
/// screenshot in one run.
fn load(page: &Path) -> Loaded {
    let png = page.with_extension("png");
    let screenshot = format!("--screenshot={}", path_str(&png));
    let (dom, log) = headless(
        page,
        &["--dump-dom", &screenshot, "--window-size=1280,1000"],
    );
    let console = (log.lines())
        .filter(|line| line.contains("CONSOLE"))
        .map(str::to_owned)
        .collect();
    let bytes = std::fs::read(&png).unwrap_or_else(|e| panic!("no screenshot {png:?}: {e}"));
    Loaded {
        dom,
        console,
        shot: decode_png(&bytes),
    }
}

/// The Chromium to run: `AGENT_CONTEXT_CHROMIUM`, which `.ci/with-chromium`
/// sets.
fn chromium() -> PathBuf {
    match std::env::var_os("AGENT_CONTEXT_CHROMIUM") {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => panic!(
            "AGENT_CONTEXT_CHROMIUM is not set: run the browser tests through .ci/with-chromium \
             (`.ci/with-chromium cargo test --features browser-tests`), which finds or installs \
             Chromium and sets it"
        ),
    }
}

/// How long one headless Chromium may take to load a page and exit.
const CHROMIUM_TIMEOUT: Duration = Duration::from_secs(90);

/// Runs headless Chromium on `page` with `action` in a fresh profile; its
/// stdout and stderr. Fails when it fails or outlives [`CHROMIUM_TIMEOUT`].
fn headless(page: &Path, action: &[&str]) -> (String, String) {
    let profile = TempDir::new("chromium");
    let (out, err) = (profile.join("stdout"), profile.join("stderr"));
    let chromium = chromium();
    let mut child = Command::new(&chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
        ])
        .args(["--hide-scrollbars", "--force-color-profile=srgb"])
        .args(["--enable-logging=stderr", "--v=0"])
        .arg(format!(
            "--user-data-dir={}",
            path_str(&profile.join("profile"))
        ))
        .args(action)
        .arg(format!("file://{}", path_str(page)))
        .stdin(Stdio::null())
        .stdout(File::create(&out).unwrap())
        .stderr(File::create(&err).unwrap())
        // Its own group, to end its helpers with it on a timeout.
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {chromium:?} (from AGENT_CONTEXT_CHROMIUM): {e}"));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > CHROMIUM_TIMEOUT {
            // SAFETY: the group of a child we started and have not reaped.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            panic!("{chromium:?} {action:?} took over {CHROMIUM_TIMEOUT:?} on {page:?}");
        }
        thread::sleep(Duration::from_millis(20));
    };
    let read = |path: &Path| String::from_utf8_lossy(&std::fs::read(path).unwrap()).into_owned();
    let (stdout, stderr) = (read(&out), read(&err));
    assert!(
        status.success(),
        "{chromium:?} {action:?}: {status}\n{stderr}"
    );
    (stdout, stderr)
}

/// Asserts the page logged nothing: no console message, no CSP violation.
fn assert_silent(loaded: &Loaded) {
    assert!(
        loaded.console.is_empty(),
        "the page logged:\n{}",
        loaded.console.join("\n")
    );
}

/// A start tag of the DOM: its attributes, values unescaped, and where its
/// content begins.
struct Tag {
    attrs: BTreeMap<String, String>,
    end: usize,
}

/// The start tags named `name` in `dom`.
fn tags(dom: &str, name: &str) -> Vec<Tag> {
    (start_tags(dom).into_iter())
        .filter(|(tag, _)| tag == name)
        .map(|(_, tag)| tag)
        .collect()
}

/// Every start tag of `dom`, serialized by Chromium, with its name:
/// attribute values are in double quotes, and a `<` outside markup is
/// escaped but in `<style>`'s text (which holds none).
fn start_tags(dom: &str) -> Vec<(String, Tag)> {
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(offset) = dom[at..].find('<') {
        at += offset + 1;
        let name_end = (dom[at..].find(|c: char| !c.is_ascii_alphanumeric()))
            .map_or(dom.len(), |end| at + end);
        // `</x>` and `<!DOCTYPE html>` have no name here.
        if name_end == at {
            continue;
        }
        let name = dom[at..name_end].to_ascii_lowercase();
        let mut attrs = BTreeMap::new();
        let mut rest = &dom[name_end..];
        loop {
            rest = rest.trim_start();
            if let Some(after) = rest.strip_prefix('>').or(rest.strip_prefix("/>")) {
                rest = after;
                break;
            }
            let attr_end = rest.find(['=', ' ', '>', '/']).expect("an attribute");
            let (attr, after) = rest.split_at(attr_end);
            rest = after;
            let mut value = String::new();
            if let Some(quoted) = rest.strip_prefix("=\"") {
                let close = quoted.find('"').expect("a closing quote");
                value = unescape(&quoted[..close]);
                rest = &quoted[close + 1..];
            }
            attrs.insert(attr.to_ascii_lowercase(), value);
        }
        at = dom.len() - rest.len();
        found.push((name, Tag { attrs, end: at }));
    }
    found
}

/// The elements the pages are made of (`tbody` the parser's own).
const PAGE_ELEMENTS: &[&str] = &[
    "html", "head", "meta", "title", "style", "body", "h1", "h2", "p", "section", "dl", "div",
    "dt", "dd", "span", "table", "colgroup", "col", "tbody", "tr", "th", "td", "details",
    "summary", "pre", "svg", "rect", "line", "text", "polygon", "polyline", "circle",
];

/// Asserts `dom` has no element the page generator does not write, and
/// no attribute that runs, loads or styles anything.
fn assert_page_elements_only(dom: &str) {
    for (name, tag) in start_tags(dom) {
        assert!(PAGE_ELEMENTS.contains(&name.as_str()), "a <{name}> element");
        for attr in tag.attrs.keys() {
            let active = attr.starts_with("on")
                || [
                    "src",
                    "srcset",
                    "href",
                    "xlink:href",
                    "action",
                    "formaction",
                    "style",
                ]
                .contains(&attr.as_str());
            assert!(!active, "<{name} {attr}=...> in the DOM");
        }
    }
}

/// The one tag of `tags` that `pick` picks.
fn one(tags: Vec<Tag>, pick: impl Fn(&Tag) -> bool) -> Tag {
    let mut picked: Vec<Tag> = tags.into_iter().filter(|t| pick(t)).collect();
    assert_eq!(picked.len(), 1, "one such tag");
    picked.pop().unwrap()
}

/// The text right after `tag`, up to the next tag.
fn text_after(dom: &str, tag: &Tag) -> String {
    unescape(dom[tag.end..].split('<').next().unwrap_or(""))
}

/// `text` as Chromium serializes an attribute value or a text node.
fn unescape(text: &str) -> String {
    (text.replace("&lt;", "<").replace("&gt;", ">"))
        .replace("&quot;", "\"")
        .replace("&nbsp;", "\u{a0}")
        .replace("&amp;", "&")
}

/// `text` in a text node of Chromium's serialization.
fn text_escaped(text: &str) -> String {
    (text.replace('&', "&amp;").replace('<', "&lt;"))
        .replace('>', "&gt;")
        .replace('\u{a0}', "&nbsp;")
}

/// The numbers of the window's section.
fn section_number(section: &Tag, name: &str) -> usize {
    section.attrs[name].parse().unwrap()
}

/// Asserts the one window section of `dom` agrees with itself: its
/// attributes with its figures, its chunk rows with its count, each bar's
/// legend with the window.
fn assert_window_consistent(dom: &str) {
    let section = one(tags(dom, "section"), |t| t.attrs["class"] == "window");
    let rest = &dom[section.end..];
    let section_dom = &rest[..rest.find("</section>").expect("the section's end")];
    let facts: BTreeMap<String, String> = (tags(section_dom, "dd").iter())
        .map(|tag| (tag.attrs["data-fact"].clone(), text_after(section_dom, tag)))
        .collect();
    for (attr, fact) in [
        ("data-token-count", "token_count"),
        ("data-budget", "budget"),
        ("data-max-tokens", "max_tokens"),
        ("data-reserve", "reserve_output"),
        ("data-decisions", "chunks"),
    ] {
        let grouped = facts[fact].replace(',', "");
        assert_eq!(section.attrs[attr], grouped, "{attr} and the fact {fact}");
    }
    let rows = tags(section_dom, "tr");
    let chunks = rows.iter().filter(|t| t.attrs.contains_key("data-chunk"));
    assert_eq!(chunks.count(), section_number(&section, "data-decisions"));
    let legend: usize = (rows.iter())
        .filter(|t| t.attrs.contains_key("data-segment"))
        .map(|t| t.attrs["data-tokens"].parse::<usize>().unwrap())
        .sum();
    // Two bars, by kind and by decision, each the whole window.
    assert_eq!(legend, 2 * section_number(&section, "data-max-tokens"));
}

/// Asserts the window section of `dom` shows `report`, the JSON report of
/// the build that wrote it: its figures and every decision.
fn assert_window_is_report(dom: &str, report: &Value) {
    let section = one(tags(dom, "section"), |t| t.attrs["class"] == "window");
    let number = |key: &str| report[key].as_u64().unwrap().to_string();
    assert_eq!(section.attrs["data-token-count"], number("token_count"));
    assert_eq!(section.attrs["data-budget"], number("budget"));
    assert_eq!(section.attrs["data-max-tokens"], number("max_tokens"));
    assert_eq!(section.attrs["data-reserve"], number("reserve_output"));
    let decisions = report["decisions"].as_array().unwrap();
    assert_eq!(section.attrs["data-decisions"], decisions.len().to_string());
    let mut rows: BTreeMap<String, (String, String)> = BTreeMap::new();
    for tag in tags(dom, "tr") {
        if let Some(id) = tag.attrs.get("data-chunk") {
            let shown = (
                tag.attrs["data-decision"].clone(),
                tag.attrs["data-tokens"].clone(),
            );
            assert!(
                rows.insert(id.clone(), shown).is_none(),
                "two rows for {id:?}"
            );
        }
    }
    let expected: BTreeMap<String, (String, String)> = (decisions.iter())
        .map(|d| {
            let decision = d["decision"].as_str().unwrap().to_owned();
            let id = d["id"].as_str().unwrap().to_owned();
            (id, (decision, d["tokens"].to_string()))
        })
        .collect();
    assert_eq!(rows, expected, "one row per decision, as the report has it");
    for tag in tags(dom, "dd") {
        let name = &tag.attrs["data-fact"];
        let shown = text_after(dom, &tag);
        assert_eq!(shown, expected_fact(report, name), "the fact {name}");
    }
}

/// What the window's fact `name` says of `report`.
fn expected_fact(report: &Value, name: &str) -> String {
    let number = |key: &str| grouped(report[key].as_u64().unwrap());
    match name {
        "model" | "encoding" => report[name].as_str().unwrap().to_owned(),
        "counted" if report["token_count_exact"] == true => "exact".to_owned(),
        "counted" => "estimate or bound".to_owned(),
        "free" => {
            let free = report["budget"].as_u64().unwrap() - report["token_count"].as_u64().unwrap();
            grouped(free)
        }
        "messages" => grouped(report["messages"].as_array().unwrap().len() as u64),
        "chunks" => grouped(report["decisions"].as_array().unwrap().len() as u64),
        "token_count"
        | "budget"
        | "max_tokens"
        | "reserve_output"
        | "trim_target"
        | "stable_prefix_tokens"
        | "unread_chunks" => number(name),
        other => panic!("a fact the test does not know: {other}"),
    }
}

/// `n` with thousands separated by commas.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Colours of the page's light palette (`--agent` and so on), as 0xRRGGBB.
const AGENT: u32 = 0x0969da;
const WORKFLOW: u32 = 0xbf8700;
const FREE: u32 = 0xeaeef2;
const RESERVE: u32 = 0x57606a;
const STUBBED: u32 = 0xcf222e;
const TRUNCATED: u32 = 0xbf8700;
const KEPT: u32 = 0x1a7f37;

/// Asserts `shot` shows a page: many colours (text is anti-aliased), none
/// on nine tenths of it, and each of `palette` (the bars and legend
/// swatches, drawn in flat colours) somewhere.
fn assert_drawn(shot: &Image, palette: &[u32]) {
    let mut counts: BTreeMap<u32, usize> = BTreeMap::new();
    for &pixel in &shot.pixels {
        *counts.entry(pixel).or_default() += 1;
    }
    let commonest = counts.values().max().copied().unwrap_or(0);
    let (width, height) = (shot.width, shot.height);
    assert_eq!(width, 1280, "the screenshot's width");
    assert!(
        counts.len() >= 256,
        "{} colours in a {width}x{height} screenshot",
        counts.len()
    );
    assert!(
        commonest * 10 < shot.pixels.len() * 9,
        "one colour covers {commonest} of {} pixels",
        shot.pixels.len()
    );
    for colour in palette {
        assert!(
            counts.contains_key(colour),
            "no #{colour:06x} pixel in the screenshot"
        );
    }
}

/// A decoded screenshot: pixels as 0xRRGGBB, row by row.
struct Image {
    width: usize,
    height: usize,
    pixels: Vec<u32>,
}

/// Decodes a PNG of 8-bit RGB or RGBA, not interlaced (Chromium's
/// screenshots): its chunks, the zlib stream of its IDAT chunks, and the
/// filter of each row.
fn decode_png(bytes: &[u8]) -> Image {
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    let (mut header, mut data) = (None, Vec::new());
    let mut at = 8;
    while at + 12 <= bytes.len() {
        let length = u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        let body = &bytes[at + 8..at + 8 + length];
        match &bytes[at + 4..at + 8] {
            b"IHDR" => header = Some(body.to_vec()),
            b"IDAT" => data.extend_from_slice(body),
            b"IEND" => break,
            _ => {}
        }
        at += 12 + length;
    }
    let header = header.expect("an IHDR chunk");
    let be = |at: usize| u32::from_be_bytes(header[at..at + 4].try_into().unwrap()) as usize;
    let (width, height) = (be(0), be(4));
    let (depth, colour, interlace) = (header[8], header[9], header[12]);
    assert_eq!((depth, interlace), (8, 0), "8-bit samples, not interlaced");
    let channels = match colour {
        2 => 3,
        6 => 4,
        other => panic!("PNG colour type {other}"),
    };
    let raw = miniz_oxide::inflate::decompress_to_vec_zlib(&data).expect("a zlib stream");
    let rows = unfilter(&raw, width * channels, height, channels);
    let pixels = (rows.chunks_exact(channels))
        .map(|p| u32::from(p[0]) << 16 | u32::from(p[1]) << 8 | u32::from(p[2]))
        .collect();
    Image {
        width,
        height,
        pixels,
    }
}

/// The samples of `height` rows of `stride` bytes, each row in `raw` after
/// its filter type byte, `bpp` bytes a pixel.
fn unfilter(raw: &[u8], stride: usize, height: usize, bpp: usize) -> Vec<u8> {
    assert_eq!(raw.len(), height * (stride + 1), "the image's size");
    let mut out = vec![0u8; stride * height];
    for y in 0..height {
        let filter = raw[y * (stride + 1)];
        let line = &raw[y * (stride + 1) + 1..(y + 1) * (stride + 1)];
        let (done, row) = out.split_at_mut(y * stride);
        let up = if y == 0 {
            None
        } else {
            Some(&done[(y - 1) * stride..])
        };
        for x in 0..stride {
            let a = if x >= bpp { row[x - bpp] } else { 0 };
            let b = up.map_or(0, |up| up[x]);
            let c = if x >= bpp {
                up.map_or(0, |up| up[x - bpp])
            } else {
                0
            };
            let predicted = match filter {
                0 => 0,
                1 => a,
                2 => b,
                3 => ((u16::from(a) + u16::from(b)) / 2) as u8,
                4 => paeth(a, b, c),
                other => panic!("PNG filter type {other}"),
            };
            row[x] = line[x].wrapping_add(predicted);
        }
    }
    out
}

/// The PNG Paeth predictor.
fn paeth(a: u8, b: u8, c: u8) -> u8 {
    let p = i16::from(a) + i16::from(b) - i16::from(c);
    let (pa, pb, pc) = (
        (p - i16::from(a)).abs(),
        (p - i16::from(b)).abs(),
        (p - i16::from(c)).abs(),
    );
    if pa <= pb && pa <= pc {
        a
    } else if pb <= pc {
        b
    } else {
        c
    }
}
