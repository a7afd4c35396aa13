"""Bad input raises InputError with the CLI's message; a budget too small
raises BudgetExceeded; nothing crashes the interpreter."""

import json
import pathlib
import re
from decimal import Decimal

import pytest

import agent_context as ac

USER = {"id": "u1", "kind": "agent", "role": "user", "text": "Fix the test"}

BAD_SESSIONS = [
    '{"chunks": [{"id": "a", "kind": "agent", "role": "user", "text": "x", "bogus": 1}]}',
    '{"chunks": [{"id": "a", "kind": "nope", "text": "x"}]}',
    '{"chunks": [{"id": "a", "kind": "agent", "text": "no role"}]}',
    '{"chunks": [{"id": "a", "kind": "agent", "role": "user", "text": "x"},\n'
    ' {"id": "a", "kind": "agent", "role": "user", "text": "dup"}]}',
    '{"chunks": [{"id": "a", "kind": "agent", "role": "user", "text": "x", "text": "y"}]}',
    '{"chunks": [',
    '{"chunks": [{"id": "a", "kind": "agent", "role": "user", "text": "\\ud83e"}]}',
    '{"system_prompt": 5}',
    '{"chunks": [{"id": "a", "kind": "environment", "text": "x", "priority": 99999999999999999999}]}',
    '{"fragments": [{"name": "x"}]}',
]


def cli_error(cli, tmp_path, text, *flags):
    path = tmp_path / "session.json"
    path.write_text(text)
    done = cli.run("build", path, *flags, check=False)
    assert done.stdout == ""
    first = done.stderr.splitlines()[0]
    assert first.startswith("error: ")
    return done.returncode, first[len("error: "):]


@pytest.mark.parametrize("text", BAD_SESSIONS)
def test_bad_input_raises_input_error_with_the_cli_message(cli, tmp_path, text):
    code, message = cli_error(cli, tmp_path, text)
    assert code == 2
    with pytest.raises(ac.InputError) as raised:
        ac.build(text)
    assert str(raised.value) == message
    assert isinstance(raised.value, ValueError) and isinstance(raised.value, ac.Error)


def test_budget_exceeded_says_required_and_available(cli, tmp_path):
    session = {"system_prompt": "You are careful. " * 200, "chunks": [USER]}
    code, message = cli_error(cli, tmp_path, json.dumps(session), "--max-tokens", "300")
    assert code == 1
    with pytest.raises(ac.BudgetExceeded) as raised:
        ac.build(session, max_tokens=300)
    error = raised.value
    assert str(error) == message
    assert (error.required, error.available) == tuple(
        int(n) for n in re.search(r"needs (\d+) tokens but only (\d+)", message).groups())
    assert error.available == 300 and error.required > 300
    assert isinstance(error, ac.Error) and not isinstance(error, ac.InputError)


@pytest.mark.parametrize("keywords, flags", [
    ({"escape": "bogus"}, None),
    ({"output": "yaml"}, None),
    ({"exclude_kinds": ["nope"]}, None),
    ({"caps": {"tool_result": "lots"}}, None),
    ({"caps": {"nosuchtag": 100}}, ["--cap", "nosuchtag=100"]),
    ({"threads": 0}, None),
    ({"estimate_factor": 0.5}, None),
    ({"max_tokens": -1}, None),
    ({"low_water": 2.0}, ["--low-water", "2.0"]),
    ({"model": ""}, ["--model", ""]),
    ({"context_management": {"edits": [{"type": "clear_everything"}]}},
     ["--context-management", '{"edits": [{"type": "clear_everything"}]}']),
    ({"context_management": "/no/such/file.json"},
     ["--context-management", "/no/such/file.json"]),
])
def test_bad_options_raise_input_error(cli, tmp_path, keywords, flags):
    session = {"chunks": [USER]}
    with pytest.raises(ac.InputError) as raised:
        ac.build(session, **keywords)
    if flags is not None:
        code, message = cli_error(cli, tmp_path, json.dumps(session), *flags)
        assert code == 2 and str(raised.value) == message


def test_unknown_keywords_are_type_errors():
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        ac.build({"chunks": [USER]}, max_token=100)


@pytest.mark.parametrize("value", [
    "not json", "", "[1, 2]", "null", b"\xff\xfe", {"chunks": [{"id": object()}]},
    {"chunks": [float("nan")]}, {"chunks": "x"}, {1: 2}, 42,
])
def test_any_bad_session_is_an_input_error(value):
    with pytest.raises(ac.InputError):
        ac.build(value)


def test_lossy_unicode_reads_a_lone_surrogate():
    text = '{"chunks": [{"id": "a", "kind": "agent", "role": "user", "text": "half \\ud83e"}]}'
    with pytest.raises(ac.InputError, match="surrogate"):
        ac.build(text)
    out = ac.build(text, lossy_unicode=True, output="openai")
    assert "\ufffd" in out["messages"][0]["content"]


def test_deep_and_huge_input_does_not_crash():
    deep = "[" * 100_000 + "]" * 100_000
    with pytest.raises(ac.InputError):
        ac.build('{"chunks": [{"id": "a", "kind": "agent", "role": "user", "data": ' + deep + "}]}")
    nested = []
    for _ in range(5000):
        nested = [nested]
    with pytest.raises((ac.InputError, RecursionError)):
        ac.build({"chunks": [{"id": "a", "kind": "agent", "role": "user", "data": nested}]})
    big = {"chunks": [USER, {"id": "r", "kind": "environment", "text": "a" * 3_000_000}]}
    assert ac.build(big, max_tokens=2000)["token_count"] <= 2000


def test_exception_hierarchy():
    assert issubclass(ac.InputError, ac.Error) and issubclass(ac.InputError, ValueError)
    assert issubclass(ac.BudgetExceeded, ac.Error)
    assert issubclass(ac.StoreError, ac.Error)
    assert issubclass(ac.ChatError, ac.StoreError) and issubclass(ac.ChatError, ac.InputError)


def test_lone_surrogates_in_python_strings():
    chunk = {"id": "a", "kind": "agent", "role": "user", "text": "half \ud83e"}
    with pytest.raises(ac.InputError, match="surrogate"):
        ac.build({"chunks": [chunk]})
    out = ac.build({"chunks": [chunk]}, lossy_unicode=True, output="openai")
    assert "\ufffd" in out["messages"][0]["content"]
    with pytest.raises(ac.InputError):
        ac.count("half \ud83e")
    with pytest.raises(TypeError):
        ac.count(b"bytes")


@pytest.mark.parametrize("value, message", [
    (float("nan"), "nan is not a JSON number"),
    (float("-inf"), "-inf is not a JSON number"),
    (Decimal("NaN"), "Decimal('NaN') is not a JSON number"),
    (Decimal("-Infinity"), "Decimal('-Infinity') is not a JSON number"),
    (Decimal("sNaN"), "Decimal('sNaN') is not a JSON number"),
    ({(1, 2): "a tuple key"}, "keys must be str, int, float, bool or None, not tuple"),
    ({float("inf"): 1}, "inf is not a JSON number"),
    (object(), "an object of type object is not a JSON value"),
    ({1, 2}, "an object of type set is not a JSON value"),
    (b"bytes", "an object of type bytes is not a JSON value"),
])
def test_values_json_cannot_hold_are_input_errors(tmp_path, value, message):
    chunk = {"id": "a", "kind": "agent", "role": "user", "data": value}
    with pytest.raises(ac.InputError, match=re.escape(f"session cannot be written as JSON: {message}")):
        ac.build({"chunks": [chunk]})
    session = ac.Session()
    with pytest.raises(ac.InputError, match=re.escape(message)):
        session.push(chunk)
    with pytest.raises(ac.InputError, match=re.escape(message)):
        ac.Engine(str(tmp_path / "s.db"), chat="c").append([chunk])
    assert len(session) == 0 and not (tmp_path / "s.db").exists()


def test_a_value_that_contains_itself_is_an_input_error():
    loop = [1]
    loop.append(loop)
    table = {"a": 1}
    table["self"] = [table]
    deep = []
    for _ in range(100_000):
        deep = [deep]
    for value, message in [(loop, "contains itself"), (table, "contains itself"),
                           (deep, "nests deeper than 256 levels")]:
        with pytest.raises(ac.InputError, match=message):
            ac.build({"chunks": [{"id": "a", "kind": "agent", "role": "user", "data": value}]})


SURROGATE = "a\ud800"


def str_arguments(tmp_path):
    """(argument, call) for every str argument, each given a lone surrogate."""
    db = str(tmp_path / "s.db")
    engine = ac.Engine(db, chat="c")
    engine.append([USER])
    engine.checkpoint("cp")
    session = {"chunks": [USER]}
    return [
        ("db", lambda: ac.Engine(SURROGATE, chat="c")),
        ("chat", lambda: ac.Engine(db, chat=SURROGATE)),
        ("branch", lambda: ac.Engine(db, chat="c", branch=SURROGATE)),
        ("name", lambda: engine.checkpoint(SURROGATE)),
        ("checkpoint", lambda: engine.restore(SURROGATE)),
        ("name", lambda: engine.restore("cp", name=SURROGATE)),
        ("name", lambda: engine.fork(SURROGATE)),
        ("to", lambda: engine.rewind(to=SURROGATE)),
        ("name", lambda: engine.rewind(to="u1", name=SURROGATE)),
        ("name", lambda: engine.switch(SURROGATE)),
        ("model", lambda: engine.append([USER], model=SURROGATE)),
        ("model", lambda: engine.build(model=SURROGATE)),
        ("model", lambda: ac.build(session, model=SURROGATE)),
        ("output", lambda: ac.build(session, output=SURROGATE)),
        ("escape", lambda: ac.build(session, escape=SURROGATE)),
        ("a key of caps", lambda: ac.build(session, caps={SURROGATE: 5})),
        ('caps["tool_result"]', lambda: ac.build(session, caps={"tool_result": SURROGATE})),
        ("an item of caps", lambda: ac.build(session, caps=[SURROGATE])),
        ("exclude_kinds", lambda: ac.build(session, exclude_kinds=SURROGATE)),
        ("an item of exclude_kinds", lambda: ac.build(session, exclude_kinds=[SURROGATE])),
        ("estimate_factor", lambda: ac.build(session, estimate_factor=SURROGATE)),
        ("context_management", lambda: ac.build(session, context_management=SURROGATE)),
        ("model", lambda: ac.ContextBuilder(model=SURROGATE)),
        ("output", lambda: ac.ContextBuilder().build(session, output=SURROGATE)),
        ("output", lambda: ac.Session().build(output=SURROGATE)),
        ("model", lambda: ac.count("x", model=SURROGATE)),
        ("estimate_factor", lambda: ac.count("x", estimate_factor=SURROGATE)),
    ]


def test_str_arguments_utf8_cannot_hold_are_input_errors(tmp_path):
    for argument, call in str_arguments(tmp_path):
        with pytest.raises(ac.InputError, match=re.escape(f"{argument} is not valid text")):
            call()
    with pytest.raises(TypeError, match="chat must be a str, not int"):
        ac.Engine(str(tmp_path / "s.db"), chat=5)


@pytest.mark.parametrize("value", [5, 1.5, True, [], ("{}",), bytearray(b"{}")])
def test_context_management_of_another_type_is_a_type_error(value):
    with pytest.raises(TypeError, match=r"context_management must be a dict, a str \(JSON or a "
                                        r"file path\), bytes or an os.PathLike, not "):
        ac.build({"chunks": [USER]}, context_management=value)
    with pytest.raises(TypeError, match="context_management"):
        ac.ContextBuilder(context_management=value)


def test_context_management_takes_a_path(tmp_path):
    edits = {"edits": [{"type": "clear_thinking_20251015"}]}
    path = tmp_path / "cm.json"
    path.write_text(json.dumps(edits))
    expected = ac.build({"chunks": [USER]}, context_management=edits)
    for given in (path, pathlib.PurePath(path), str(path), json.dumps(edits).encode()):
        assert ac.build({"chunks": [USER]}, context_management=given) == expected


@pytest.mark.parametrize("keyword", ["max_tokens", "reserve", "max_input_bytes", "threads"])
def test_counts_are_ints_and_not_bools(keyword):
    for value in (True, False, 1.5, "5", Decimal(5)):
        with pytest.raises(TypeError, match=f"{keyword} must be an int, not "):
            ac.build({"chunks": [USER]}, **{keyword: value})
        with pytest.raises(TypeError, match=f"{keyword} must be an int, not "):
            ac.ContextBuilder(**{keyword: value})
    with pytest.raises(TypeError, match=re.escape('caps["tool_result"] must be an int, not bool')):
        ac.build({"chunks": [USER]}, caps={"tool_result": True})


@pytest.mark.parametrize("keyword", ["explain", "no_cache_control", "group_fragments",
                                     "cache_control"])
def test_switches_are_bools(keyword):
    for value in ("no", 0, 1, None.__class__):
        with pytest.raises(TypeError, match=f"{keyword} must be a bool, not "):
            ac.ContextBuilder(**{keyword: value})
    ac.ContextBuilder(**{keyword: False})


def test_keywords_of_the_wrong_shape_are_type_errors_naming_them():
    class Index:
        def __index__(self):
            return 4000

    assert ac.ContextBuilder(max_tokens=Index()).options()["max_tokens"] == 4000
    with pytest.raises(TypeError, match="caps must be a dict"):
        ac.ContextBuilder(caps=5)
    with pytest.raises(TypeError, match="exclude_kinds must be a kind's name or a list"):
        ac.ContextBuilder(exclude_kinds=5)
    with pytest.raises(TypeError, match="estimate_factor must be a float or its text, not bool"):
        ac.ContextBuilder(estimate_factor=True)
    with pytest.raises(ac.InputError, match="-1 is not a number of bytes"):
        ac.ContextBuilder(max_input_bytes=-1)
    with pytest.raises(ac.InputError, match="at least one byte"):
        ac.ContextBuilder(max_input_bytes=0)


def test_the_low_water_mark_is_a_float_and_not_a_bool():
    for value in (True, "0.5", None.__class__):
        with pytest.raises(TypeError, match="low_water must be a float, not "):
            ac.build({"chunks": [USER]}, low_water=value)
    ac.build({"chunks": [USER]}, low_water=1)
    with pytest.raises(ac.InputError, match="low_water"):
        ac.build({"chunks": [USER]}, low_water=1.5)


@pytest.mark.parametrize("keyword", ["max_tokens", "reserve", "max_input_bytes"])
def test_a_count_too_large_says_the_largest(keyword):
    for value in (2 ** 64, 2 ** 70, 2 ** 200):
        with pytest.raises(ac.InputError, match=re.escape(
                f"invalid value for {keyword}: {value} is too large; the largest is "
                f"{2 ** 64 - 1}")):
            ac.build({"chunks": [USER]}, **{keyword: value})
    unit = "bytes" if keyword == "max_input_bytes" else "tokens"
    for value in (-1, -2 ** 70):
        with pytest.raises(ac.InputError, match=re.escape(
                f"invalid value for {keyword}: {value} is not a number of {unit} (0 or more)")):
            ac.build({"chunks": [USER]}, **{keyword: value})
