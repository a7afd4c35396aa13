"""Session: one build per turn, always within the budget, and a build
equal to a cold build of the same chunks while nothing is trimmed."""

import json
import threading

import pytest

import agent_context as ac

from test_build import NUMBERS_SESSION, assert_numbers_kept

BUDGET = 24_000


def turn(i):
    call = f"call_{i}"
    return [
        {"id": f"u{i}", "kind": "agent", "role": "user", "text": f"Step {i}: read the next file."},
        {"id": f"c{i}", "kind": "workflow", "action": "tool_call", "tool": "read_file",
         "call_id": call, "data": {"path": f"src/m{i}.rs"}},
        {"id": f"r{i}", "kind": "environment", "tool": "read_file", "call_id": call,
         "success": True, "text": "\n".join(f"line {i}.{n}: let x_{n} = {n * i};" for n in range(300))},
        {"id": f"a{i}", "kind": "agent", "role": "assistant", "text": f"Read m{i}.rs; moving on."},
    ]


def test_the_loop_stays_in_budget_and_keeps_pairs():
    session = ac.Session(ac.ContextBuilder(max_tokens=BUDGET, reserve=1000))
    for i in range(60):
        session.extend(turn(i)[:3])
        session.push(turn(i)[3])
        report = session.build()
        assert report["token_count"] <= BUDGET - 1000
        included = set(report["included"])
        assert f"u{i}" in included and f"r{i}" in included  # the latest user turn and tool use
        for j in range(i + 1):
            assert (f"c{j}" in included) == (f"r{j}" in included), j
    trimmed = [d for d in report["decisions"] if d["decision"] in ("stubbed", "dropped")]
    assert trimmed, "60 turns must overflow the budget"
    assert len(session) == 240
    assert session.stats()["chunks_rendered"] <= 8


@pytest.mark.filterwarnings("ignore::agent_context.ContextWarning")
def test_a_session_build_equals_build_before_any_trim():
    builder = ac.ContextBuilder(max_tokens=120_000, caps={"tool_result": 2000}, cache_control=False)
    session = ac.Session(builder, {"system_prompt": "You are careful."})
    for i in range(5):
        session.extend(turn(i))
        for output in ac.OUTPUTS:
            got = session.build(output=output)
            expected = ac.build(session.state(), max_tokens=120_000, cache_control=False,
                                caps={"tool_result": 2000}, output=output)
            if output == "report":
                # What the session's previous build shares with this one
                # (`build` was given none): see test_cache.py.
                got.pop("stable_prefix_tokens", None)
                expected.pop("stable_prefix_tokens", None)
                got.pop("cache", None)
            assert got == expected, output


def test_bad_chunks_leave_the_session_unchanged():
    session = ac.Session(ac.ContextBuilder(max_tokens=8000))
    session.extend(turn(0))
    with pytest.raises(ac.InputError):
        session.push({"id": "u0", "kind": "agent", "role": "user", "text": "duplicate id"})
    with pytest.raises(ac.InputError):
        session.extend([{"id": "ok", "kind": "thinking", "text": "x"}, {"id": "bad"}])
    with pytest.raises(ac.InputError):
        session.extend({"id": "not a list"})
    assert len(session) == 4
    with pytest.raises(ac.InputError):
        session.build(output="yaml")


def test_sessions_build_in_parallel_threads():
    results, errors = {}, []

    def work(n):
        try:
            session = ac.Session(ac.ContextBuilder(max_tokens=BUDGET))
            for i in range(20):
                session.extend(turn(i))
                results[n] = session.build(output="openai")
        except Exception as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert all(results[n] == results[0] for n in range(4))


def test_one_session_shared_by_threads():
    session = ac.Session(ac.ContextBuilder(max_tokens=BUDGET))
    session.extend(turn(0))

    def work(n):
        for i in range(1, 6):
            session.push({"id": f"t{n}-{i}", "kind": "thinking", "text": f"thought {n} {i}"})
            assert session.build()["token_count"] <= BUDGET

    threads = [threading.Thread(target=work, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(session) == 4 + 15


def test_results_reuse_nothing_stale_across_trims():
    """A session converts only the rows a build did not share with the one
    before. Through trims, its report and openai messages must agree with
    each other and with the text output (never cached) of the same prompt,
    and the report with itself."""
    session = ac.Session(ac.ContextBuilder(max_tokens=12_000, low_water=0.6))
    trims = 0
    for i in range(40):
        session.extend(turn(i))
        report = session.build()
        openai = session.build(output="openai")
        text = session.build(output="text")
        contents = [m["content"] for m in report["messages"]]
        assert [m["content"] for m in openai["messages"]] == contents, i
        assert [m["role"] for m in openai["messages"]] == [m["role"] for m in report["messages"]]
        at = 0
        for content in contents:
            at = text.index(content, at) + len(content)
        assert sum(m["tokens"] for m in report["messages"]) + 3 == report["token_count"] <= 12_000
        shown = [c for m in report["messages"] for c in m["chunk_ids"]]
        assert sorted(shown) == sorted(report["included"]), i
        decided = {d["id"]: d["decision"] for d in report["decisions"]}
        assert {c for c, d in decided.items() if d != "dropped"} == set(report["included"]), i
        assert len(decided) == len(session)
        trims += any(d == "stubbed" for d in decided.values())
    assert trims > 10


@pytest.mark.filterwarnings("ignore::agent_context.ContextWarning")
def test_state_keeps_every_digit(cli, tmp_path):
    path = tmp_path / "numbers.json"
    path.write_text(NUMBERS_SESSION)
    expected = cli.run("build", path, "--output", "text").stdout
    state = ac.Session(state=NUMBERS_SESSION).state()
    assert_numbers_kept(state["chunks"][1]["data"])
    assert ac.build(state, output="text") == expected
    session = ac.Session()
    session.push(state["chunks"][0])
    session.extend(state["chunks"][1:])
    assert session.state() == state
    assert session.build(output="text") == expected
    native = session.build(output="anthropic-native")
    assert_numbers_kept(native["messages"][1]["content"][0]["input"])
