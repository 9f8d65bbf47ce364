"""A cold read split over two processes (ADR 0015): the same answer as one process, whatever the child
does. Forcing the split on small inputs (`FROM`) lets a few tasks take the path 50,000 take."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pytest
from test_task_units import FakeTree, act, add

from michi.tasks import index, table, twocore


def test_the_second_half_is_made_in_a_child(split: None) -> None:
    here = os.getpid()
    got = twocore.halves(list(range(10)), lambda xs: [(x * x, os.getpid()) for x in xs])
    assert [v for v, _ in got] == [x * x for x in range(10)]
    assert {p for _, p in got[:5]} == {here}
    assert here not in {p for _, p in got[5:]}


def test_a_child_that_fails_costs_only_time(split: None) -> None:
    here = os.getpid()

    def work(xs: Sequence[int]) -> list[int]:
        if os.getpid() != here:
            raise RuntimeError("the child fails")
        return [x + 1 for x in xs]

    assert twocore.halves(list(range(9)), work) == list(range(1, 10))

    def garbage(xs: Sequence[int]) -> list[object]:
        return [x for x in xs] if os.getpid() == here else [object()]  # does not marshal

    assert twocore.halves(list(range(9)), garbage) == list(range(9))


def test_an_error_here_is_raised_and_the_child_reaped(split: None, monkeypatch: pytest.MonkeyPatch) -> None:
    here = os.getpid()
    forked: list[int] = []
    fork = os.fork

    def counted() -> int:
        pid = fork()
        if pid:
            forked.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", counted)

    def work(xs: Sequence[int]) -> list[int]:
        if os.getpid() == here:
            raise ValueError("this side fails")
        return list(xs)

    with pytest.raises(ValueError, match="this side fails"):
        twocore.halves(list(range(8)), work)
    assert forked
    for pid in forked:  # its own children: another test's git processes are not its business
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # no child left behind, not even a zombie


def test_meanwhile_runs_once_here(split: None, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []
    twocore.halves(list(range(8)), list, meanwhile=lambda: seen.append(os.getpid()), share=0.25)
    assert seen == [os.getpid()]
    monkeypatch.setenv("MICHI_ONE_CORE", "1")
    assert not twocore.usable(10**6)
    twocore.halves(list(range(8)), list, meanwhile=lambda: seen.append(os.getpid()))
    assert seen == [os.getpid()] * 2


def _tree(tmp_path: Path) -> FakeTree:
    tree = FakeTree()
    for n in range(1, 12):
        add(tree, tmp_path, f"task {n}", n, **({"tags": ["next"]} if n % 3 == 0 else {}))
    act(tree, tmp_path, "modify", "2", depends_refs=["1", "5"])
    act(tree, tmp_path, "done", "5")
    tree.files["x/.tasks/00000000-0000-4000-8000-000000000099.json"] = b"{broken"
    tree.files["y/.tasks/00000000-0000-4000-8000-000000000098.json"] = b'{"uuid": "wrong"}'
    return tree


def test_a_cold_index_and_table_are_the_same_from_two_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = _tree(tmp_path)
    monkeypatch.setenv("MICHI_ONE_CORE", "1")
    one = index.Index.build(tree)
    one_table = table.table_of(one, None)
    monkeypatch.delenv("MICHI_ONE_CORE")
    monkeypatch.setattr(twocore, "FROM", 1)
    monkeypatch.setattr(twocore, "_cores", lambda: 2)
    forked: list[bool] = []
    usable = twocore.usable
    monkeypatch.setattr(twocore, "usable", lambda *a: forked.append(usable(*a)) or forked[-1])
    two = index.Index.build(tree)
    assert list(two.entries.items()) == list(one.entries.items())  # the same records, problems and order
    assert len(one.problems) == 2
    saved: list[bool] = []
    assert table.table_of(two, None, lambda: saved.append(True)) == one_table
    assert saved == [True]
    assert forked == [True, True]  # the records, then the rows, half from a child
    assert any(one_table[table.COL["flags"]])  # a blocked and a blocking task were in it


def test_what_the_child_sends_after_is_read_by_whoever_wants_it(split: None, tmp_path: Path) -> None:
    big = b"x" * (4 << 20)  # more than a pipe holds: the child waits for a reader
    here = os.getpid()
    mine, first, rest = twocore.beside_then(lambda: str(os.getpid()).encode(), lambda: big, lambda: here)
    assert mine == here and first is not None and int(first) != here and rest is not None
    child = int(first)
    # Handed to a child `later` starts (this process closes its end), which reads it whole.
    out = tmp_path / "rest"
    twocore.later(lambda: out.write_bytes(rest.read() or b""))
    assert twocore._rests == []
    twocore.wait()
    assert out.read_bytes() == big
    with pytest.raises(ChildProcessError):
        os.waitpid(child, os.WNOHANG)  # reaped
    # Read here, twice: the same bytes.
    _, _, rest = twocore.beside_then(lambda: b"", lambda: big, lambda: None)
    assert rest is not None and rest.read() == big and rest.read() == big
    # Never read: the child, still sending, ends when this process stops listening, and is reaped.
    _, _, rest = twocore.beside_then(lambda: b"", lambda: big, lambda: None)
    twocore.wait()
    assert twocore._writers == [] and twocore._rests == []


def test_a_child_that_dies_before_what_it_sends_after(split: None) -> None:
    def dies() -> bytes:
        os._exit(3)

    _, first, rest = twocore.beside_then(lambda: b"table", dies, lambda: None)
    assert first == b"table" and rest is not None and rest.read() is None
    twocore.wait()
