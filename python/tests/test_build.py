"""`agent_context.build` equals `agent-context build` for every output."""

import json
import math
import random
import struct
from decimal import Decimal

import pytest

import agent_context as ac

from conftest import DATA, ROOT

OUTPUTS = ["report", "openai", "anthropic", "text", "openai-native",
           "openai-responses", "anthropic-native", "ai-sdk"]

# (keywords, the same as flags)
SETTINGS = [
    ({"max_tokens": 4000, "reserve": 500}, ["--max-tokens", "4000", "--reserve", "500"]),
    ({}, []),
    ({"max_tokens": 6000, "caps": {"tool_result": 300, "tool:bash": None}, "low_water": 1.0},
     ["--max-tokens", "6000", "--cap", "tool_result=300", "--cap", "tool:bash=none",
      "--low-water", "1.0"]),
    ({"max_tokens": 20000, "context_management": {"edits": [
        {"type": "clear_thinking_20251015"},
        {"type": "clear_tool_uses_20250919", "trigger": {"type": "tool_uses", "value": 6},
         "keep": {"type": "tool_uses", "value": 3}}]}},
     ["--max-tokens", "20000", "--context-management", json.dumps({"edits": [
         {"type": "clear_thinking_20251015"},
         {"type": "clear_tool_uses_20250919", "trigger": {"type": "tool_uses", "value": 6},
          "keep": {"type": "tool_uses", "value": 3}}]})]),
    ({"max_tokens": 5000, "escape": "xml", "framing": "none", "exclude_kinds": ["thinking"],
      "fragments_format": "toon", "content_format": "xml"},
     ["--max-tokens", "5000", "--escape", "xml", "--framing", "none", "--exclude-kind",
      "thinking", "--fragments-format", "toon", "--content-format", "xml"]),
    ({"model": "claude-sonnet-4-5", "max_tokens": 8000, "estimate_factor": 1.25,
      "cache_control": False},
     ["--model", "claude-sonnet-4-5", "--max-tokens", "8000", "--estimate-factor", "1.25",
      "--no-cache-control"]),
    ({"max_tokens": 6000, "group_fragments": True, "fragments_format": "markdown"},
     ["--max-tokens", "6000", "--group-fragments", "--fragments-format", "markdown"]),
    ({"model": "gpt-4", "max_tokens": 3000, "reserve": 200, "threads": 1},
     ["--model", "gpt-4", "--max-tokens", "3000", "--reserve", "200", "--threads", "1"]),
]


def cli_build(cli, path, flags, output):
    done = cli.run("build", path, *flags, "--output", output)
    return done.stdout if output == "text" else json.loads(done.stdout)


@pytest.mark.filterwarnings("ignore::agent_context.ContextWarning")
@pytest.mark.parametrize("path", DATA, ids=lambda p: p.stem)
@pytest.mark.parametrize("output", OUTPUTS)
@pytest.mark.parametrize("setting", range(len(SETTINGS)))
def test_build_equals_the_cli(cli, path, output, setting):
    keywords, flags = SETTINGS[setting]
    session = json.loads(path.read_text())
    expected = cli_build(cli, path, flags, output)
    assert ac.build(session, output=output, **keywords) == expected
    # A JSON string is read as the CLI reads the file.
    assert ac.build(path.read_text(), output=output, **keywords) == expected


@pytest.mark.filterwarnings("ignore::agent_context.ContextWarning")
@pytest.mark.parametrize("output", OUTPUTS)
def test_the_builder_builds_as_build(sessions, output):
    _, session = sessions["coding-agent"]
    builder = ac.ContextBuilder(max_tokens=4000, reserve=500, caps={"tool_result": 500})
    expected = ac.build(session, max_tokens=4000, reserve=500, caps={"tool_result": 500},
                        output=output)
    assert builder.build(session, output=output) == expected
    assert builder.with_options(output=output).build(session) == expected


@pytest.mark.filterwarnings("ignore::agent_context.ContextWarning")
def test_the_builder_s_options_are_every_setting_and_make_the_same_builder(sessions):
    _, session = sessions["coding-agent"]
    settings = dict(model="gpt-4.1", max_tokens=4000, reserve=500, escape="xml",
                    framing="none", content_format="commonmark", fragments_format="toon",
                    group_fragments=True, caps={"tool_result": 500, "id:c08": None},
                    low_water=0.5, context_management={"edits": [
                        {"type": "clear_thinking_20251015"}]}, compact_at=0.75,
                    exclude_kinds=["thinking"], estimate_factor="1.7", threads=2,
                    output="openai", explain=False, cache_control=False,
                    max_input_bytes=1 << 20, input="session")
    builder = ac.ContextBuilder(**settings)
    options = builder.options()
    assert options == settings
    again = ac.ContextBuilder(**options)
    assert again.options() == options
    assert again.build(session) == builder.build(session)
    # The defaults, as the keywords' defaults are.
    assert ac.ContextBuilder().options() == dict(
        model="gpt-4o", max_tokens=None, reserve=None, escape="structural",
        framing="openai", content_format="gfm", fragments_format="xml",
        group_fragments=False, caps={}, low_water=0.8, context_management=None,
        compact_at=None, exclude_kinds=[], estimate_factor=None, threads=None, output="report",
        explain=False, cache_control=True, max_input_bytes=None, input="session")


def test_every_list_of_the_keywords_is_the_builder_s(sessions):
    """The keywords are written out in the signatures Python shows and in
    the type stubs: each list is the one `options()` derives from the
    library's, with its defaults."""
    import ast
    import inspect

    defaults = ac.ContextBuilder().options()
    defaults["caps"] = defaults["exclude_kinds"] = None
    # `previous` is a single build's (the CLI's `--previous`), no setting.
    for function, extra in ((ac.build, {"previous": None, "lossy_unicode": False}),
                            (ac.ContextBuilder, {}), (ac.Engine.build, {"previous": None})):
        signature = inspect.signature(function)
        shown = {name: p.default for name, p in signature.parameters.items()
                 if p.kind == p.KEYWORD_ONLY}
        assert shown == {**defaults, **extra}, function
    stubs = ast.parse((ROOT / "python" / "agent_context.pyi").read_text())
    stubbed = {}
    for node in ast.walk(stubs):
        if isinstance(node, ast.FunctionDef) and node.args.kwonlyargs:
            stubbed.setdefault(node.name, set()).update(a.arg for a in node.args.kwonlyargs)
    keywords = set(defaults) | {"no_cache_control"}
    assert stubbed["build"] >= keywords | {"previous"}
    assert stubbed["__init__"] >= keywords


def test_types_of_the_outputs(sessions):
    _, session = sessions["coding-agent"]
    assert isinstance(ac.build(session, output="text"), str)
    report = ac.build(session, max_tokens=4000)
    assert report["token_count"] <= 4000 and report["token_count_exact"] is True
    assert set(ac.OUTPUTS) == set(OUTPUTS)


def test_numbers_keep_their_digits():
    session = {"chunks": [
        {"id": "u", "kind": "agent", "role": "user", "text": "go"},
        {"id": "c", "kind": "workflow", "tool": "t", "call_id": "k",
         "data": {"big": 12345678901234567890123}},
        {"id": "r", "kind": "environment", "tool": "t", "call_id": "k", "text": "ok"},
    ]}
    body = ac.build(session, output="openai-native")
    assert "12345678901234567890123" in json.dumps(body)


def test_warnings_are_context_warnings(sessions):
    _, session = sessions["coding-agent"]
    with pytest.warns(ac.ContextWarning, match="not in the model table"):
        ac.build(session, model="gpt-4.2", max_tokens=8000)


def test_count_equals_the_cli(cli, tmp_path):
    texts = [p.read_text() for p in DATA] + [
        "", "hello world", " " * 10000, "<|endoftext|> is text", "🦀 Ünïcödé 漢字",
        "x" * 5000, "def f():\n\treturn 1\n\n\n",
    ]
    for model in ["gpt-4o", "gpt-4", "claude-3-5-sonnet"]:
        for text in texts:
            path = tmp_path / "t.txt"
            path.write_text(text)
            expected = int(cli.run("count", path, "--model", model).stdout)
            with pytest.warns(ac.ContextWarning) if model.startswith("claude") else _none():
                assert ac.count(text, model=model) == expected
    path = tmp_path / "t.txt"
    path.write_text(texts[0])
    expected = int(cli.run("count", path, "--model", "gpt-4.2", "--estimate-factor", "2").stdout)
    with pytest.warns(ac.ContextWarning):
        assert ac.count(texts[0], model="gpt-4.2", estimate_factor=2) == expected


class _none:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_explain_writes_the_cli_breakdown(cli, sessions, capsys):
    path, session = sessions["coding-agent"]
    done = cli.run("build", path, "--max-tokens", "4000", "--explain", "--output", "openai")
    breakdown = "".join(line for line in done.stderr.splitlines(keepends=True)
                        if not line.startswith("warning: "))
    assert ac.build(session, max_tokens=4000, explain=True, output="openai") == json.loads(done.stdout)
    assert capsys.readouterr().err == breakdown and breakdown
    ac.ContextBuilder(max_tokens=4000, explain=True).build(session)
    assert capsys.readouterr().err == cli.run("build", path, "--max-tokens", "4000", "--explain").stderr


@pytest.mark.filterwarnings("ignore::agent_context.ContextWarning")
def test_every_flag_has_its_keyword(sessions, tmp_path):
    _, session = sessions["coding-agent"]
    base = ac.build(session, max_tokens=6000, caps={"tool_result": 300}, exclude_kinds=["thinking"],
                    cache_control=False, output="anthropic-native")
    assert ac.build(session, max_tokens=6000, cap=["tool_result=300"], exclude_kind="thinking",
                    no_cache_control=True, output="anthropic_native") == base
    assert ac.build(session, max_tokens=6000, caps={"tool_result": 300}, exclude_kinds=["thinking"],
                    cache_control=False, output="anthropic-native", model=None, escape=None,
                    low_water=None, threads=None, estimate_factor=None, max_input_bytes=None) == base
    with pytest.raises(ac.InputError, match="larger than the limit"):
        ac.build(session, max_input_bytes=100)
    path = tmp_path / "cm.json"
    path.write_text('{"edits": [{"type": "clear_thinking_20251015"}]}')
    assert ac.build(session, context_management=str(path)) == ac.build(
        session, context_management={"edits": [{"type": "clear_thinking_20251015"}]})


# Numbers no float holds: read as decimal.Decimal, written back digit for digit.
NUMBERS = {"big": "1e400", "long": "0.1000000000000000000001", "tiny": "1E-400"}
NUMBERS_SESSION = (
    '{"chunks": [{"id": "u1", "kind": "agent", "role": "user", "text": "Add these."}, '
    '{"id": "c1", "kind": "workflow", "tool": "calc", "call_id": "k1", "data": {'
    + ", ".join(f'"{key}": {text}' for key, text in NUMBERS.items())
    + ', "int": 123456789012345678901234567890, "half": 0.5}}, '
    '{"id": "r1", "kind": "environment", "tool": "calc", "call_id": "k1", "text": "done"}]}'
)


def as_python(text):
    """A JSON number as agent_context gives it: an int for an integer, the
    float whose shortest form has the digits' value, else a Decimal."""
    if not any(c in text for c in ".eE"):
        return int(text)
    value = float(text)
    if math.isfinite(value) and Decimal(repr(value)) == Decimal(text):
        return value
    return Decimal(text)


def assert_numbers_kept(data):
    for key, text in NUMBERS.items():
        assert type(data[key]) is Decimal and data[key] == Decimal(text), key
    assert data["int"] == 123456789012345678901234567890
    assert type(data["half"]) is float and data["half"] == 0.5


def test_integers_past_python_s_digit_limit_and_minus_zero_go_both_ways(cli, tmp_path):
    huge = "9" * 5000
    session = ('{"chunks": [{"id": "u1", "kind": "agent", "role": "user", "text": "hi", '
               '"custom": {"huge": ' + huge + ', "zero": -0}}]}')
    state = ac.Session(ac.ContextBuilder(), session).state()
    custom = state["chunks"][0]["custom"]
    assert type(custom["huge"]) is int and custom["huge"] == 10 ** 5000 - 1
    assert type(custom["zero"]) is Decimal and str(custom["zero"]) == "-0"
    # Written back digit for digit, sign included.
    again = ac.Session(ac.ContextBuilder(), state).state()
    assert again["chunks"][0]["custom"] == custom
    assert str(again["chunks"][0]["custom"]["zero"]) == "-0"
    session_with_int = ac.Session(ac.ContextBuilder())
    session_with_int.push({"id": "u1", "kind": "agent", "role": "user", "text": "hi",
                           "custom": {"huge": 10 ** 5000}})
    assert session_with_int.state()["chunks"][0]["custom"]["huge"] == 10 ** 5000


@pytest.mark.filterwarnings("ignore::agent_context.ContextWarning")
def test_numbers_no_float_holds_are_decimals_both_ways(cli, tmp_path):
    path = tmp_path / "numbers.json"
    path.write_text(NUMBERS_SESSION)
    body = ac.build(NUMBERS_SESSION, output="anthropic-native")
    done = cli.run("build", path, "--output", "anthropic-native")
    assert body == json.loads(done.stdout, parse_float=as_python)
    assert_numbers_kept(body["messages"][1]["content"][0]["input"])
    # Given back, a Decimal keeps its digits: the CLI's prompt.
    session = json.loads(NUMBERS_SESSION, parse_float=as_python)
    assert_numbers_kept(session["chunks"][1]["data"])
    expected = cli.run("build", path, "--output", "text").stdout
    assert "1e+400" in expected and "0.1000000000000000000001" in expected
    assert ac.build(session, output="text") == expected
    # A float that holds the digits' value stays a float.
    state = ac.Session(state='{"chunks": [{"id": "c", "kind": "agent", "role": "user", '
                             '"data": [1.50, 1e300, -0.0, 0.1]}]}').state()
    floats = state["chunks"][0]["data"]
    assert floats == [1.5, 1e300, -0.0, 0.1] and {type(f) for f in floats} == {float}


class Str(str):
    pass


class Int(int):
    pass


class Float(float):
    pass


class Dict(dict):
    pass


class List(list):
    pass


def test_values_are_written_as_json_dumps_writes_them(cli, tmp_path):
    rng = random.Random(5)
    floats = [struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
              for _ in range(500)]
    floats = [f for f in floats if math.isfinite(f)] + [
        0.0, -0.0, 0.1, 1e15, 1e16, 1e-4, 1e-5, 123456.789, 5e-324, 1.7976931348623157e308,
        2.0 ** 60, 1 / 3]
    data = {
        "floats": floats,
        "ints": [0, -1, 2 ** 63, -2 ** 63 - 1, 10 ** 40, Int(7)],
        "subclasses": [Str("s"), Float(2.5), Dict(a=1), List([1, 2]), (3, (4,))],
        "text": 'quote " backslash \\ newline \n tab \t nul \x00 bell \x07 del \x7f '
                "é 漢 🦀 a pair given as halves \ud83e\udd80",
        7: "int key", 2.5: "float key", False: "bool key", None: "None key",
        "nested": {"empty": {}, "list": [], "flags": [True, False, None]},
    }
    session = {"chunks": [{"id": "u", "kind": "agent", "role": "user", "data": data}]}
    path = tmp_path / "s.json"
    path.write_text(json.dumps(session))
    assert ac.build(session, output="text") == cli.run("build", path, "--output", "text").stdout
    # Nesting the parser refuses is named at the place json.dumps's text has it.
    deep = []
    for _ in range(252):
        deep = [deep]
    session["chunks"][0]["data"] = {"a": [1, 2], "deep": deep}
    path.write_text(json.dumps(session))
    done = cli.run("build", path, check=False)
    with pytest.raises(ac.InputError) as raised:
        ac.build(session)
    assert done.returncode == 2 and "column" in str(raised.value)
    assert str(raised.value) == done.stderr.splitlines()[0][len("error: "):]
