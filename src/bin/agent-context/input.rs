//! Reading the command's input: bounded in size, refused at the first byte
//! that cannot start it, and announced on a terminal.
//!
//! `yes | agent-context build` or `/dev/zero` as FILE would otherwise be read
//! until memory runs out. A JSON input is judged by its first byte past a
//! byte-order mark and whitespace, as soon as it arrives; every input stops
//! at `--max-input-bytes`.

use std::fs::File;
use std::io::{self, IsTerminal, Read};

use agent_context::command::{self, InputFormat};
use agent_context::{ErrorKind, JsonProblem, MemoryState, ParseOptions, Result};

/// `--max-input-bytes` for commands that read raw text (`count`).
#[derive(clap::Args)]
pub(crate) struct InputLimit {
    /// Refuse input larger than SIZE bytes (suffixes KiB, MiB, GiB).
    #[arg(long, value_name = "SIZE", default_value = "256MiB", value_parser = parse_size)]
    max_input_bytes: u64,
}

/// The input flags of commands that read JSON (`build`, `render`, `replay`).
#[derive(clap::Args)]
pub(crate) struct JsonInput {
    #[command(flatten)]
    limit: InputLimit,
    /// Read a lone UTF-16 surrogate escape (`\ud83e`, half of a character)
    /// as U+FFFD instead of failing.
    #[arg(long)]
    lossy_unicode: bool,
}

/// The input flags of commands that read a session (`build`, `replay`).
#[derive(clap::Args)]
pub(crate) struct SessionInput {
    #[command(flatten)]
    json: JsonInput,
    /// What FILE holds: a session, or the AI SDK's messages (an array of
    /// UIMessages or ModelMessages, or `{system, messages}`).
    #[arg(long = "input", value_enum, value_name = "FORMAT", default_value_t = InputFormat::Session)]
    format: InputFormat,
}

impl JsonInput {
    pub(crate) fn parse_options(&self) -> ParseOptions {
        ParseOptions::new().lossy_unicode(self.lossy_unicode)
    }

    pub(crate) fn limit(&self) -> &InputLimit {
        &self.limit
    }
}

/// What an input must be, which decides the byte it may start with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expected {
    /// A session: a JSON object.
    Session,
    /// `{"fragments": [...]}`: a JSON object.
    FragmentsDocument,
    /// Any JSON value.
    JsonValue,
    /// Raw text: anything, up to the size limit.
    Text,
}

impl Expected {
    fn what(self) -> &'static str {
        match self {
            Expected::Session => "a session",
            Expected::FragmentsDocument => "a fragments document",
            Expected::JsonValue => "a JSON value",
            Expected::Text => "text",
        }
    }

    /// Whether `byte` (past whitespace and a byte-order mark) can start it.
    fn may_start_with(self, byte: u8) -> bool {
        match self {
            Expected::Session | Expected::FragmentsDocument => byte == b'{',
            Expected::JsonValue => matches!(
                byte,
                b'{' | b'[' | b'"' | b'-' | b'0'..=b'9' | b't' | b'f' | b'n'
            ),
            Expected::Text => true,
        }
    }

    /// The rule the first byte broke.
    fn rule(self) -> &'static str {
        match self {
            Expected::Session => "a session is a JSON object, starting with `{`",
            Expected::FragmentsDocument => {
                "a fragments document is a JSON object, starting with `{`"
            }
            Expected::JsonValue | Expected::Text => {
                "JSON starts with `{`, `[`, `\"`, a digit, `-`, `true`, `false` or `null`"
            }
        }
    }
}

/// Reads and parses a session from FILE (or `-`, standard input) in the
/// `--input` format, writing the warnings of the reading.
pub(crate) fn read_session(file: &str, input: &SessionInput) -> Result<MemoryState> {
    let expected = match input.format {
        InputFormat::Session => Expected::Session,
        _ => Expected::JsonValue,
    };
    let text = read_input(file, &input.json.limit, expected)?;
    let options = input.json.parse_options();
    let (state, warnings) = command::read_session(&text, input.format, options)?;
    for warning in warnings {
        eprintln!("warning: {warning}");
    }
    Ok(state)
}

/// Reads FILE (or `-`, standard input) as UTF-8 text, refusing more than
/// the limit and, for JSON, a first byte that cannot start it.
pub(crate) fn read_input(file: &str, limit: &InputLimit, expected: Expected) -> Result<String> {
    let (context, bytes) = if file == "-" {
        let stdin = io::stdin();
        if let Some(hint) = terminal_hint(stdin.is_terminal(), expected) {
            eprintln!("{hint}");
        }
        let bytes = read_bounded(stdin.lock(), limit.max_input_bytes, expected, 0);
        ("reading standard input".to_owned(), bytes)
    } else {
        let bytes = File::open(file).and_then(|opened| {
            // Read into a buffer of the file's size: grown by doubling, a
            // large input would briefly need three times its size.
            let size = opened.metadata().map_or(0, |meta| meta.len());
            read_bounded(opened, limit.max_input_bytes, expected, size)
        });
        (format!("reading {file}"), bytes)
    };
    let bytes = bytes.map_err(|source| ErrorKind::Io {
        context: context.clone(),
        source,
    })?;
    String::from_utf8(bytes).map_err(|e| {
        let offset = e.utf8_error().valid_up_to();
        let source = invalid(format!("not UTF-8: invalid byte at offset {offset}"));
        ErrorKind::Io { context, source }.into()
    })
}

/// What a person at a terminal sees while the command waits for input
/// they may not know it wants.
pub(crate) fn terminal_hint(is_terminal: bool, expected: Expected) -> Option<String> {
    is_terminal.then(|| {
        format!(
            "agent-context: reading {} from standard input; pipe it in or pass a FILE \
             (end typed input with Ctrl-D)",
            expected.what()
        )
    })
}

/// Reads at most `limit` bytes, into a buffer of `size` bytes to begin
/// with (the file's size, where there is one); for JSON, stops at the first
/// significant byte that cannot start it instead of reading on.
fn read_bounded(
    reader: impl Read,
    limit: u64,
    expected: Expected,
    size: u64,
) -> io::Result<Vec<u8>> {
    let mut reader = reader.take(limit.saturating_add(1));
    let mut bytes = Vec::with_capacity(usize::try_from(size.min(limit)).unwrap_or(0));
    if expected != Expected::Text {
        let mut chunk = [0u8; 8192];
        let mut start = StartScanner::default();
        loop {
            let read = match reader.read(&mut chunk) {
                Ok(0) => break,
                Ok(read) => read,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) => return Err(error),
            };
            bytes.extend_from_slice(&chunk[..read]);
            if let Some(offset) = start.scan(&chunk[..read]) {
                check_start(bytes[offset], offset, expected)?;
                break;
            }
        }
    }
    reader.read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(invalid(format!(
            "the input is larger than the limit of {}; raise it with --max-input-bytes",
            limit_text(limit)
        )));
    }
    Ok(bytes)
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Finds the first byte past a byte-order mark and JSON whitespace as the
/// input arrives, looking at each byte once: whitespace without end (`yes ''`)
/// costs as much to read as anything else.
#[derive(Default)]
struct StartScanner {
    /// Bytes scanned so far, all of them whitespace or part of a BOM.
    scanned: usize,
    /// Whether a BOM can no longer start at offset 0 (ruled out or skipped).
    past_bom: bool,
    /// Bytes looked at, over all calls.
    #[cfg(test)]
    looked_at: usize,
}

impl StartScanner {
    /// Scans `new`, the bytes that follow those scanned before; the offset
    /// (from the input's start) of the first significant byte, once one
    /// has arrived.
    fn scan(&mut self, new: &[u8]) -> Option<usize> {
        for &byte in new {
            #[cfg(test)]
            {
                self.looked_at += 1;
            }
            if !self.past_bom {
                if byte == BOM[self.scanned] {
                    self.scanned += 1;
                    self.past_bom = self.scanned == BOM.len();
                    continue;
                }
                self.past_bom = true;
                if self.scanned > 0 {
                    return Some(0); // the start of a BOM, then something else
                }
            }
            if !matches!(byte, b' ' | b'\t' | b'\n' | b'\r') {
                return Some(self.scanned);
            }
            self.scanned += 1;
        }
        None
    }
}

fn check_start(byte: u8, offset: usize, expected: Expected) -> io::Result<()> {
    if expected.may_start_with(byte) {
        return Ok(());
    }
    let shown = if byte.is_ascii_graphic() {
        format!("{:?} (byte 0x{byte:02x})", byte as char)
    } else {
        format!("byte 0x{byte:02x}")
    };
    Err(invalid(format!(
        "this is not {}: it starts with {shown} at offset {offset}; {}",
        expected.what(),
        expected.rule()
    )))
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

/// Parses `--max-input-bytes`: a byte count, or one with a binary suffix.
fn parse_size(text: &str) -> std::result::Result<u64, String> {
    let (digits, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(at) => text.split_at(at),
        None => (text, ""),
    };
    let scale: u64 = match unit.trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        _ => {
            return Err(format!(
                "expected bytes, or a number with KiB, MiB or GiB; found {text:?}"
            ));
        }
    };
    if digits.is_empty() {
        return Err(format!(
            "expected bytes, or a number with KiB, MiB or GiB; found {text:?}"
        ));
    }
    // `digits` are ASCII digits: parsing fails only past `u64::MAX`.
    let most = u64::MAX / scale;
    match digits.parse::<u64>() {
        Ok(0) => Err(format!(
            "expected a size of at least one byte; found {text:?}"
        )),
        Ok(n) if n <= most => Ok(n * scale),
        _ => Err(format!(
            "{text:?} is too large; at most {most} {}",
            if scale == 1 { "bytes" } else { unit.trim() }
        )),
    }
}

/// `268435456` as `256 MiB`, `1` as `1 byte`, for messages.
fn human_size(bytes: u64) -> String {
    let units = [(1u64 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    match units
        .iter()
        .find(|(size, _)| bytes >= *size && bytes.is_multiple_of(*size))
    {
        Some((size, unit)) => format!("{} {unit}", bytes / size),
        None if bytes == 1 => "1 byte".to_owned(),
        None => format!("{bytes} bytes"),
    }
}

/// The size limit for messages: `256 MiB (268435456 bytes)`, `1000 bytes`.
fn limit_text(limit: u64) -> String {
    match human_size(limit) {
        human if human.ends_with("byte") || human.ends_with("bytes") => human,
        human => format!("{human} ({limit} bytes)"),
    }
}

/// A line of advice for errors whose fix is a flag of this command (the
/// library's errors name its settings, `max_tokens`, not our flags).
pub(crate) fn flag_hint(kind: &ErrorKind) -> Option<&'static str> {
    match kind {
        ErrorKind::JsonRejected {
            problem: JsonProblem::LoneSurrogate { .. },
            ..
        } => Some("pass --lossy-unicode to read a lone surrogate as U+FFFD"),
        ErrorKind::Option { option, .. } if option == "max_tokens" => {
            Some("set the prompt budget with --max-tokens N")
        }
        ErrorKind::Option { option, message }
            if option == "reserve_output" && message.starts_with("Anthropic requires") =>
        {
            Some("give --reserve N above 0, or leave it out for the default of 4096")
        }
        ErrorKind::Option { option, .. } if option == "reserve_output" => {
            Some("lower --reserve, or raise --max-tokens")
        }
        ErrorKind::BudgetExceeded { .. } => Some("raise --max-tokens, or lower --reserve"),
        ErrorKind::Option { option, message }
            if option == "db" && message.starts_with("no store") =>
        {
            Some("`chat append` creates one; other verbs need --db naming an existing store")
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(reader: impl Read, limit: u64, expected: Expected) -> String {
        match read_bounded(reader, limit, expected, 0) {
            Ok(bytes) => panic!("read {} bytes", bytes.len()),
            Err(error) => error.to_string(),
        }
    }

    #[test]
    fn endless_input_stops_at_its_first_byte_or_the_limit() {
        // `io::repeat` never ends: these return only because reading stops.
        assert_eq!(
            refusal(io::repeat(0), u64::MAX, Expected::Session),
            "this is not a session: it starts with byte 0x00 at offset 0; a session is a JSON \
             object, starting with `{`"
        );
        let yes = refusal(io::repeat(b'y'), u64::MAX, Expected::JsonValue);
        assert!(
            yes.contains("it starts with 'y' (byte 0x79) at offset 0"),
            "{yes}"
        );
        let spaces = refusal(io::repeat(b' '), 1 << 20, Expected::Session);
        assert_eq!(
            spaces,
            "the input is larger than the limit of 1 MiB (1048576 bytes); raise it with \
             --max-input-bytes"
        );
        let text = refusal(io::repeat(b'y'), 1000, Expected::Text);
        assert!(text.contains("limit of 1000 bytes"), "{text}");
    }

    #[test]
    fn the_first_significant_byte_is_past_a_bom_and_whitespace() {
        let bom_then_bad = b"\xEF\xBB\xBF \n x";
        let error = refusal(&bom_then_bad[..], 100, Expected::Session);
        assert!(error.contains("'x' (byte 0x78) at offset 6"), "{error}");
        assert_eq!(StartScanner::default().scan(b"\xEF\xBB"), None);
        let ok = read_bounded(&b"\xEF\xBB\xBF{}"[..], 5, Expected::Session, 0).unwrap();
        assert_eq!(ok, b"\xEF\xBB\xBF{}");
        // Exactly at the limit is allowed.
        assert!(read_bounded(&b"{}"[..], 2, Expected::Session, 2).is_ok());
        assert!(read_bounded(&b"{} "[..], 2, Expected::Session, 3).is_err());
    }

    /// The offset `scan` finds when `input` arrives in pieces of `piece`
    /// bytes, and how many bytes it looked at.
    fn scan_in_pieces(input: &[u8], piece: usize) -> (Option<usize>, usize) {
        let mut scanner = StartScanner::default();
        let found = input.chunks(piece).find_map(|new| scanner.scan(new));
        (found, scanner.looked_at)
    }

    #[test]
    fn the_start_is_found_looking_at_each_byte_once() {
        // 8 MiB of whitespace in 8 KiB reads: rescanning the buffer after
        // each read would look at some 4 GiB.
        let mut input = b" \n\t\r".repeat(2 << 20);
        assert_eq!(scan_in_pieces(&input, 8192), (None, input.len()));
        input.push(b'{');
        assert_eq!(
            scan_in_pieces(&input, 8192),
            (Some(input.len() - 1), input.len())
        );
        for piece in 1..=4 {
            assert_eq!(scan_in_pieces(b"\xEF\xBB\xBF \n{", piece), (Some(5), 6));
            assert_eq!(scan_in_pieces(b"\xEF\xBB x", piece), (Some(0), 3));
            assert_eq!(scan_in_pieces(b" \xEF\xBB\xBF", piece), (Some(1), 2));
            assert_eq!(scan_in_pieces(b"\xEF\xBB", piece), (None, 2));
        }
    }

    #[test]
    fn sizes_take_binary_suffixes() {
        assert_eq!(parse_size("256MiB"), Ok(256 << 20));
        assert_eq!(parse_size("1000"), Ok(1000));
        assert_eq!(parse_size("2 GiB"), Ok(2 << 30));
        assert!(parse_size("0").is_err());
        assert!(parse_size("12MB").unwrap_err().contains("KiB, MiB or GiB"));
        assert_eq!(
            parse_size("0").unwrap_err(),
            "expected a size of at least one byte; found \"0\""
        );
        assert!(parse_size("MiB").unwrap_err().contains("expected bytes"));
        assert_eq!(
            parse_size("99999999999GiB").unwrap_err(),
            "\"99999999999GiB\" is too large; at most 17179869183 GiB"
        );
        assert_eq!(
            parse_size("99999999999999999999").unwrap_err(),
            "\"99999999999999999999\" is too large; at most 18446744073709551615 bytes"
        );
        assert_eq!(parse_size("17179869183GiB"), Ok(17179869183 << 30));
        assert_eq!(human_size(256 << 20), "256 MiB");
        assert_eq!(human_size(1500), "1500 bytes");
        assert_eq!(human_size(1), "1 byte");
        assert_eq!(limit_text(1), "1 byte");
        assert_eq!(limit_text(1000), "1000 bytes");
        assert_eq!(limit_text(1 << 20), "1 MiB (1048576 bytes)");
    }

    #[test]
    fn a_terminal_is_told_what_is_awaited() {
        let hint = terminal_hint(true, Expected::Session).unwrap();
        assert_eq!(
            hint,
            "agent-context: reading a session from standard input; pipe it in or pass a FILE \
             (end typed input with Ctrl-D)"
        );
        let count = terminal_hint(true, Expected::Text).unwrap();
        assert!(
            count.starts_with("agent-context: reading text from"),
            "{count}"
        );
        assert_eq!(terminal_hint(false, Expected::Session), None);
    }
}
