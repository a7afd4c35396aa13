"""The prompt-cache explainer: a report's `cache` (what a provider's prefix
cache keeps of the previous prompt, and where and why it broke), from a
`Session`'s own previous build or from `previous=`, the CLI's `--previous
REPORT`."""

import json
import os
import shutil

import pytest

import agent_context as ac

from test_session import turn

CAUSES = {"settings_changed", "system_changed", "compaction", "context_edit", "refilled",
          "chunk_changed"}

# A budget the turns of `turn` outgrow every other turn: each refill trims.
SMALL = dict(max_tokens=12_000, low_water=0.6)
SMALL_FLAGS = ["--max-tokens", "12000", "--low-water", "0.6"]


def session_of(turns):
    return {"system_prompt": "You are careful.",
            "chunks": [chunk for i in range(turns) for chunk in turn(i)]}


def prompt_tokens(report):
    """The tokens of a report's messages: its prompt but the reply's priming."""
    return sum(m["tokens"] for m in report["messages"])


def assert_cache_shape(cache):
    assert list(cache) == ["stable_prefix_tokens", "broke_at"]
    broke = cache["broke_at"]
    if broke is not None:
        assert list(broke) == ["message", "chunk", "cause", "tokens_lost"]
        assert broke["cause"] in CAUSES
        assert broke["tokens_lost"] > 0


def test_a_session_s_builds_after_the_first_carry_cache():
    session = ac.Session(ac.ContextBuilder(max_tokens=120_000))
    for i in range(6):
        session.extend(turn(i))
        report = session.build()
        assert "settings_key" in report
        if i == 0:
            assert "cache" not in report
            continue
        cache = report["cache"]
        assert_cache_shape(cache)
        assert cache["stable_prefix_tokens"] == report["stable_prefix_tokens"] > 0
        # Nothing trims in this budget: the whole previous prompt carries over.
        assert cache["broke_at"] is None, i


def test_a_session_turn_that_trims_breaks_the_prefix_as_refilled():
    session = ac.Session(ac.ContextBuilder(**SMALL))
    previous = None
    refills = 0
    for i in range(12):
        session.extend(turn(i))
        report = session.build()
        if previous is not None:
            cache = report["cache"]
            assert_cache_shape(cache)
            assert cache["stable_prefix_tokens"] == report["stable_prefix_tokens"]
            broke = cache["broke_at"]
            trimmed = any(d["decision"] in ("stubbed", "dropped") for d in report["decisions"])
            if broke is not None:
                assert broke["cause"] == "refilled", (i, broke)
                assert trimmed, i
                # The break names the first chunk the previous prompt held
                # there, and blames the tokens after it.
                assert broke["chunk"] in previous["included"]
                assert broke["tokens_lost"] <= previous["token_count"]
                assert cache["stable_prefix_tokens"] < previous["token_count"]
                refills += 1
        previous = report
    assert refills >= 3, "12 turns in a 12k window must refill it"


@pytest.mark.filterwarnings("ignore::agent_context.ContextWarning")
@pytest.mark.parametrize("output", ["report", "openai", "anthropic-native"])
@pytest.mark.parametrize("turns", [(1, 2), (2, 3), (3, 3)], ids=["grew", "refilled", "same"])
def test_build_with_previous_equals_the_cli_s(cli, tmp_path, output, turns):
    before, now = turns
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    first.write_text(json.dumps(session_of(before)))
    second.write_text(json.dumps(session_of(now)))
    saved = tmp_path / "first-report.json"
    saved.write_text(cli.run("build", first, *SMALL_FLAGS).stdout)
    done = cli.run("build", second, *SMALL_FLAGS, "--previous", saved, "--output", output)
    expected = json.loads(done.stdout)

    first_report = ac.build(session_of(before), **SMALL)
    assert first_report == json.loads(saved.read_text())
    got = ac.build(session_of(now), previous=first_report, output=output, **SMALL)
    assert got == expected
    # The report's JSON text reads as the dict does; so does a builder's build.
    assert ac.build(second.read_text(), previous=saved.read_text(), output=output,
                    **SMALL) == expected
    assert ac.build(session_of(now), previous=saved.read_bytes(), output=output,
                    **SMALL) == expected
    builder = ac.ContextBuilder(**SMALL)
    assert builder.build(session_of(now), previous=first_report, output=output) == expected
    if output == "report":
        cache = got["cache"]
        assert_cache_shape(cache)
        assert cache["stable_prefix_tokens"] == got["stable_prefix_tokens"]
        broke = cache["broke_at"]
        if before == now:
            assert broke is None
            assert cache["stable_prefix_tokens"] == prompt_tokens(first_report) > 0
        elif turns == (2, 3):
            assert broke is not None and broke["cause"] == "refilled", cache
        # None is no previous build: no cache.
        assert "cache" not in ac.build(session_of(now), previous=None, **SMALL)


@pytest.mark.filterwarnings("ignore::agent_context.ContextWarning")
def test_a_previous_build_under_other_settings_says_so(cli, tmp_path):
    first_report = ac.build(session_of(2), max_tokens=12_000)
    got = ac.build(session_of(2), previous=first_report, max_tokens=6_000)
    assert got["cache"]["broke_at"]["cause"] == "settings_changed"
    path, saved = tmp_path / "session.json", tmp_path / "report.json"
    path.write_text(json.dumps(session_of(2)))
    saved.write_text(json.dumps(first_report))
    assert got == cli.json("build", path, "--max-tokens", "6000", "--previous", saved)


@pytest.mark.filterwarnings("ignore::agent_context.ContextWarning")
@pytest.mark.parametrize("output", ["report", "openai"])
def test_engine_build_with_previous_equals_chat_build_s(cli, tmp_path, output):
    db = tmp_path / "agent.db"
    engine = ac.Engine(str(db), chat="loop")
    previous = None
    for i in range(5):
        engine.append(turn(i))
        if previous is None:
            previous = engine.build(**SMALL)
            assert "cache" not in previous
            continue
        # The CLI builds a copy of the store, so both builds start from the
        # same kept record.
        copy = tmp_path / f"copy-{i}.db"
        for suffix in ("", "-wal"):
            if os.path.exists(f"{db}{suffix}"):
                shutil.copy(f"{db}{suffix}", f"{copy}{suffix}")
        saved = tmp_path / f"report-{i}.json"
        saved.write_text(json.dumps(previous))
        done = cli.run("chat", "build", "--db", copy, "--chat", "loop", *SMALL_FLAGS,
                       "--previous", saved, "--output", output)
        got = engine.build(previous=previous, output=output, **SMALL)
        assert got == json.loads(done.stdout), i
        if output == "report":
            assert_cache_shape(got["cache"])
            previous = got
        else:
            previous = engine.build(**SMALL)
    if output == "report":
        # The same build as its own previous one: everything carries over.
        again = engine.build(previous=previous, **SMALL)
        assert again["cache"] == {"stable_prefix_tokens": prompt_tokens(previous),
                                  "broke_at": None}


BAD_REPORTS = [
    {"not": "a report"},
    {"model": "gpt-4o"},
    "not json",
    "{",
    "[1, 2]",
    b"{}",
    json.dumps({"chunks": []}),
]


@pytest.mark.filterwarnings("ignore::agent_context.ContextWarning")
@pytest.mark.parametrize("bad", BAD_REPORTS, ids=repr)
def test_a_previous_that_is_no_report_is_an_input_error_naming_it(cli, tmp_path, bad):
    session = session_of(1)
    builder = ac.ContextBuilder()
    engine = ac.Engine(str(tmp_path / "agent.db"), chat="c")
    engine.append(session)
    calls = [lambda: ac.build(session, previous=bad),
             lambda: builder.build(session, previous=bad),
             lambda: engine.build(previous=bad)]
    for call in calls:
        with pytest.raises(ac.InputError, match="`previous`") as raised:
            call()
        assert "not a build's report" in str(raised.value)
    # The library's message, as the CLI words it for its flag.
    path, saved = tmp_path / "session.json", tmp_path / "bad.json"
    path.write_text(json.dumps(session))
    saved.write_bytes(bad if isinstance(bad, bytes) else
                      (bad if isinstance(bad, str) else json.dumps(bad)).encode())
    done = cli.run("build", path, "--previous", saved, check=False)
    assert done.returncode == 2
    message = str(raised.value)
    assert done.stderr.strip() == "error: " + message.replace("`previous`", "`--previous`")


def test_a_previous_of_another_type_is_a_type_error():
    session = session_of(1)
    for bad in ([1, 2], 42, True, object()):
        with pytest.raises(TypeError, match="previous must be a dict"):
            ac.build(session, previous=bad)
        with pytest.raises(TypeError, match="previous must be a dict"):
            ac.ContextBuilder().build(session, previous=bad)
    # A report that no JSON holds is an InputError naming it.
    with pytest.raises(ac.InputError, match="previous cannot be written as JSON"):
        ac.build(session, previous={"model": float("nan")})


def test_previous_is_one_build_s_and_no_setting():
    with pytest.raises(TypeError, match="previous is an argument of a single build"):
        ac.ContextBuilder(previous={})
    with pytest.raises(TypeError, match="previous is an argument of a single build"):
        ac.ContextBuilder().with_options(previous={})
    with pytest.raises(TypeError):
        ac.Session(ac.ContextBuilder()).build(previous={})
