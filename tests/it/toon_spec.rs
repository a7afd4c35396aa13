//! The TOON spec's own encode conformance fixtures (vendored under
//! `tests/fixtures/toon-spec/`, see the README there), run through
//! [`render_value`] and through `agent-context render --data --format toon`
//! with `--delimiter` / `--indent` from each fixture's options. Each test
//! fails on any mismatch and names every failing fixture.

use std::path::{Path, PathBuf};

use agent_context::format::{FormatOptions, FragmentFormat, render_value};
use serde::Deserialize;
use serde_json::Value;

use crate::common::cli::{Run, run};
use crate::common::same_json;

/// The non-error encode cases the vendored suite holds. Pinned so that a lost
/// file or a parse that finds nothing fails instead of passing vacuously.
const EXPECTED_CASES: usize = 179;

#[derive(Deserialize)]
struct FixtureFile {
    tests: Vec<Case>,
}

/// Unknown fields are refused: a fixture with a new option must fail loudly,
/// not run with the option ignored.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(dead_code)] // `spec_section`, `note` and `min_spec_version` are read only to be accepted.
struct Case {
    name: String,
    input: Value,
    expected: Value,
    #[serde(default)]
    options: CaseOptions,
    #[serde(default)]
    should_error: bool,
    spec_section: Option<String>,
    note: Option<String>,
    min_spec_version: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CaseOptions {
    delimiter: Option<String>,
    indent_size: Option<usize>,
}

/// One fixture case with where it came from.
struct Named {
    label: String,
    case: Case,
}

impl Named {
    fn options(&self) -> FormatOptions {
        let mut options = FormatOptions::default();
        if let Some(delimiter) = &self.case.options.delimiter {
            let delimiter = delimiter
                .parse()
                .unwrap_or_else(|e| panic!("{}: {e}", self.label));
            options = options.with_delimiter(delimiter);
        }
        if let Some(indent) = self.case.options.indent_size {
            options = options.with_indent(indent);
        }
        options
    }

    /// The CLI flags for the fixture's options (none for the defaults).
    fn flags(&self) -> Vec<String> {
        let mut flags = Vec::new();
        if let Some(delimiter) = &self.case.options.delimiter {
            flags.extend(["--delimiter".to_owned(), delimiter.clone()]);
        }
        if let Some(indent) = self.case.options.indent_size {
            flags.extend(["--indent".to_owned(), indent.to_string()]);
        }
        flags
    }

    fn expected(&self) -> &str {
        self.case
            .expected
            .as_str()
            .unwrap_or_else(|| panic!("{}: `expected` is not a string", self.label))
    }
}

fn fixtures() -> Vec<Named> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/toon-spec");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("read fixture dir").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    paths.sort();
    let mut cases = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(&path).expect("read fixture");
        let file: FixtureFile =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let stem = path.file_stem().unwrap_or_default().to_string_lossy();
        cases.extend(file.tests.into_iter().map(|case| Named {
            label: format!("{stem}: {}", case.name),
            case,
        }));
    }
    let non_error = cases.iter().filter(|c| !c.case.should_error).count();
    assert_eq!(non_error, EXPECTED_CASES, "non-error fixtures found");
    cases
}

/// Runs `check` on every case; fails listing each case it rejected.
fn run_all(what: &str, check: impl Fn(&Named) -> Result<(), String>) {
    let cases = fixtures();
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|named| {
            check(named)
                .err()
                .map(|why| format!("{}: {why}", named.label))
        })
        .collect();
    println!(
        "TOON spec fixtures ({what}): {} of {} pass",
        cases.len() - failures.len(),
        cases.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} TOON spec fixtures fail ({what}):\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn every_encode_fixture_renders_exactly_through_the_library() {
    run_all("render_value", |named| {
        let result = render_value(&named.case.input, FragmentFormat::Toon, &named.options());
        match (result, named.case.should_error) {
            (Ok(out), false) if out == named.expected() => Ok(()),
            (Ok(out), false) => Err(format!("got {out:?}, expected {:?}", named.expected())),
            (Err(e), false) => Err(format!("error {e}")),
            (Ok(out), true) => Err(format!("expected an error, got {out:?}")),
            (Err(_), true) => Ok(()),
        }
    });
}

/// Runs `agent-context render --data --format toon` on `input`.
fn render_cli(input: &Value, flags: &[String]) -> Run {
    let mut args = vec!["render", "--data", "--format", "toon"];
    args.extend(flags.iter().map(String::as_str));
    run(&args, &input.to_string())
}

#[test]
fn every_encode_fixture_renders_exactly_through_the_cli() {
    run_all("agent-context render --data", |named| {
        let Run {
            code,
            stdout,
            stderr,
        } = render_cli(&named.case.input, &named.flags());
        if named.case.should_error {
            return match (code, stdout.is_empty()) {
                (2, true) => Ok(()),
                _ => Err(format!(
                    "expected exit 2 and no output, got {code}: {stdout:?}"
                )),
            };
        }
        let expected = format!("{}\n", named.expected());
        match code {
            0 if stdout == expected && stderr.is_empty() => Ok(()),
            0 => Err(format!(
                "got {stdout:?} (stderr {stderr:?}), expected {expected:?}"
            )),
            _ => Err(format!("exit {code}: {stderr}")),
        }
    });
}

#[test]
fn what_we_render_decodes_back_to_the_input() {
    run_all("decoded by toon-format", |named| {
        if named.case.should_error {
            return Ok(());
        }
        let options = named.options();
        let out = render_value(&named.case.input, FragmentFormat::Toon, &options)
            .map_err(|e| e.to_string())?;
        let decode_options = toon_format::DecodeOptions::new()
            .with_indent(toon_format::Indent::Spaces(options.indent));
        let back: Value = toon_format::decode(&out, &decode_options)
            .map_err(|e| format!("{out:?} does not decode: {e}"))?;
        if same_json(&back, &named.case.input) {
            Ok(())
        } else {
            Err(format!("{out:?} decodes to {back}"))
        }
    });
}

#[test]
fn data_nested_past_the_limit_is_an_error_from_the_cli() {
    let mut value = serde_json::json!(1);
    for _ in 0..crate::common::limits::FRAGMENT_MAX_DEPTH {
        value = serde_json::json!([value]);
    }
    let Run { code, stdout, .. } = render_cli(&value, &[]);
    assert_eq!((code, stdout.is_empty()), (0, false), "64 levels render");
    let Run {
        code,
        stdout,
        stderr,
    } = render_cli(&serde_json::json!({ "hosts": value }), &[]);
    assert_eq!((code, stdout.as_str()), (2, ""), "{stderr}");
    assert!(stderr.contains("`hosts[0][0]"), "{stderr}");
    assert!(stderr.contains("nested deeper than 64 levels"), "{stderr}");
}
