"""A cold list built with one child for half of everything (ADR 0015): the same table, caches and count of
unreadable files as one process makes, with depends across the halves, unreadable files, one content at
two paths, and whatever the child does. Forcing the split (`FROM`) lets a few tasks take 50,000's path."""

from __future__ import annotations

import marshal
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from test_task_units import FakeTree, act, add

from michi.commands.task_common import LIST_CACHE
from michi.tasks import coldtable, index, table, twocore


def _tree(tmp_path: Path) -> FakeTree:
    tree = FakeTree()
    for n in range(1, 15):
        add(tree, tmp_path, f"task {n}", n, **({"tags": ["next"]} if n % 3 == 0 else {}))
    act(tree, tmp_path, "modify", "2", depends_refs=["1", "13"])  # a first-half task on a second-half one
    act(tree, tmp_path, "modify", "12", depends_refs=["3", "5"])  # and the other way
    act(tree, tmp_path, "done", "5")
    tree.files["x/.tasks/00000000-0000-4000-8000-000000000099.json"] = b"{broken"
    tree.files["y/.tasks/00000000-0000-4000-8000-000000000098.json"] = b'{"uuid": "wrong"}'
    first = next(p for p in tree.files if p.endswith("000000000001.json"))
    tree.files["z/.tasks/00000000-0000-4000-8000-000000000001.json"] = tree.files[first]  # a copied folder
    return tree


def _one(tree: FakeTree, state: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[index.Index, table.Table]:
    monkeypatch.setenv("MICHI_ONE_CORE", "1")
    one = index.for_tree(tree, state)
    made = table.table_of(one, None)
    monkeypatch.delenv("MICHI_ONE_CORE")
    return one, made


def _same(tree: FakeTree, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cold build of `tree` gives what one process gives: table, problems and both caches."""
    one, one_table = _one(tree, tmp_path / "one", monkeypatch)
    got = coldtable.built(tree, tmp_path / "two")
    assert got is not None
    two_table, problems, save = got
    assert two_table == one_table
    assert problems == len(one.problems) == 2
    assert not (tmp_path / "two" / index.CACHE_NAME).exists()  # written when asked, beside the printing
    save()
    cached = index.load_cache(tmp_path / "two")
    assert cached is not None and cached.tree == one.tree
    assert list(cached.entries.items()) == list(one.entries.items())  # the same records in the same order
    for (_o, mine, _p), (_o2, theirs, _p2) in zip(cached.entries.values(), one.entries.values(), strict=True):
        assert mine is None or list(mine) == list(theirs or ())  # keys in the same order
    ids = index.load_checked(tmp_path / "two", index.IDS_NAME)
    assert ids == index.load_checked(tmp_path / "one", index.IDS_NAME)
    assert list(ids[1]) == list(one.ids)
    assert index._has_map(tmp_path / "two") and index._has_map(tmp_path / "one")  # for `done N` next


def test_a_cold_table_and_caches_from_two_processes_are_those_of_one(
    split: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = _tree(tmp_path)
    answers: list[bool] = []
    theirs = coldtable._theirs
    monkeypatch.setattr(coldtable, "_theirs", lambda *a: answers.append(theirs(*a) is not None) or theirs(*a))
    _same(tree, tmp_path, monkeypatch)
    assert answers == [True]  # the child made its half
    flags = table.table_of(index.for_tree(tree, tmp_path / "one"), None)[table.COL["flags"]]
    assert flags.count(table.BLOCKED) and flags.count(table.BLOCKING)  # rows the children made again


def test_without_depends_no_row_is_made_again(
    split: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = FakeTree()
    for n in range(1, 9):
        add(tree, tmp_path, f"task {n}", n)
    tree.files["x/.tasks/00000000-0000-4000-8000-000000000099.json"] = b"{broken"
    tree.files["y/.tasks/00000000-0000-4000-8000-000000000098.json"] = b"<<<<<<< HEAD\n"
    monkeypatch.setattr(coldtable, "_relink", lambda *a: pytest.fail("no task has depends"))
    _same(tree, tmp_path, monkeypatch)


def test_a_child_that_fails_or_lies_costs_only_time(
    split: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = _tree(tmp_path)
    here = os.getpid()
    half = coldtable._half

    def failing(tree: Any, files: dict[str, str], paths: Sequence[str]) -> Any:
        if os.getpid() != here:
            raise RuntimeError("the child fails")
        return half(tree, files, paths)

    monkeypatch.setattr(coldtable, "_half", failing)
    _same(tree, tmp_path / "a", monkeypatch)
    monkeypatch.setattr(coldtable, "_half", half)
    wrong = marshal.dumps(([], {}, False, 0))  # marshals, but no rows
    beside = twocore.beside_then
    for sent in (b"garbage", wrong):
        monkeypatch.setattr(
            twocore,
            "beside_then",
            lambda there, then, here, sent=sent: (beside(there, then, here)[0], sent, None),
        )
        _same(tree, tmp_path / sent.hex()[:8], monkeypatch)

    def cut(there: Any, then: Any, here: Any) -> Any:  # the child's answer whole, but one row cut short
        mine, data, rest = beside(there, then, here)
        rows, ids, linked, problems = marshal.loads(data)
        rows[0] = rows[0][:-1]
        return mine, marshal.dumps((rows, ids, linked, problems)), rest

    monkeypatch.setattr(twocore, "beside_then", cut)
    _same(tree, tmp_path / "cut", monkeypatch)

    class Lying:
        def read(self) -> bytes:
            return marshal.dumps({"another half's": ("oid", None, None)})

    # A table not believed: the records sent after it are not believed either (nor cached).
    for sent in (b"garbage", wrong):
        monkeypatch.setattr(
            twocore,
            "beside_then",
            lambda there, then, here, sent=sent: (beside(there, then, here)[0], sent, Lying()),
        )
        _same(tree, tmp_path / ("lying" + sent.hex()[:8]), monkeypatch)
    # The table sent whole, the records after it not (cut, garbage, another half's): made again by
    # whoever needs them, here for the rows with depends and for the index cache.
    for n, records in enumerate((None, b"garbage", marshal.dumps({}))):

        class Rest:
            def read(self, records: bytes | None = records) -> bytes | None:
                return records

        def faking(there: Any, then: Any, here: Any) -> Any:
            mine, data, rest = beside(there, then, here)
            assert rest is not None and data is not None  # the child sent its table
            rest.close()
            return mine, data, Rest()

        monkeypatch.setattr(twocore, "beside_then", faking)
        _same(tree, tmp_path / f"records{n}", monkeypatch)
    monkeypatch.setattr(twocore, "beside_then", beside)


def test_no_cold_build_on_one_core_or_with_an_index(
    split: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = _tree(tmp_path)
    monkeypatch.setenv("MICHI_ONE_CORE", "1")
    assert coldtable.built(tree, tmp_path / "a") is None
    monkeypatch.delenv("MICHI_ONE_CORE")
    index.for_tree(tree, tmp_path / "b")  # its cache file is there: the usual way brings it up
    index._last.clear()
    assert coldtable.built(tree, tmp_path / "b") is None


def test_an_index_cache_cut_at_a_part_s_end_is_not_believed(tmp_path: Path) -> None:
    parts = [marshal.dumps({"a": ("1", None, "bad")}), marshal.dumps({"b": ("2", None, "bad")})]
    whole = index.dump_parts("tree", 2, parts)
    (tmp_path / index.CACHE_NAME).write_bytes(whole)
    loaded = index.load_cache(tmp_path)
    assert loaded is not None and list(loaded.entries) == ["a", "b"]
    for cut in (whole[: -len(parts[1])], whole[:-1], whole + parts[1], index.dump_parts("tree", 3, parts)):
        (tmp_path / index.CACHE_NAME).write_bytes(cut)
        assert index.load_cache(tmp_path) is None


def test_later_work_is_done_by_a_child_and_waited_for(split: None, tmp_path: Path) -> None:
    done = tmp_path / "done"
    twocore.later(lambda: done.write_text(str(os.getpid())))
    child = twocore._writers[-1]
    assert child in twocore._held  # what it works on is not freed here while it reads it
    twocore.wait()
    assert done.read_text() == str(child) != str(os.getpid())
    assert child not in twocore._writers and child not in twocore._held
    with pytest.raises(ChildProcessError):
        os.waitpid(child, os.WNOHANG)  # reaped (this child: other tests' children are not its business)
    twocore.later(lambda: 1 / 0)  # a failure is silent, as the cache writes it is for
    twocore.wait()


def test_at_exit_reaps_the_writer_and_leaves_what_it_was_handed(split: None, tmp_path: Path) -> None:
    done = tmp_path / "done"
    twocore.later(lambda: done.write_text("x"))
    child = twocore._writers[-1]
    twocore.at_exit()
    assert done.read_text() == "x" and child not in twocore._writers
    assert child in twocore._held and twocore.holding()  # the process's end frees it, if anything
    twocore.wait()  # reaps nothing more; frees what was held
    assert not twocore.holding()


def test_a_process_holding_a_writer_s_work_ends_with_its_code_and_output(tmp_path: Path) -> None:
    """`client.end`: the writer waited for, the output flushed, the command's exit code, no teardown."""
    done = tmp_path / "done"
    program = (
        "import sys\nfrom michi.serve import client\nfrom michi.tasks import twocore\n"
        "twocore.later(lambda: open(sys.argv[1], 'w').write('written'))\n"
        "sys.stdout.write('out')\nsys.stderr.write('err')\n"
        "assert twocore.holding() or twocore._safe() is False\nclient.end(3)\nraise SystemExit(9)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", program, str(done)], capture_output=True, text=True, timeout=60, check=False
    )
    assert (proc.returncode, proc.stdout, proc.stderr) == (3, "out", "err")
    assert done.read_text() == "written"


def test_later_work_runs_here_on_one_core(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MICHI_ONE_CORE", "1")
    done = tmp_path / "done"
    twocore.later(lambda: done.write_text(str(os.getpid())))
    assert done.read_text() == str(os.getpid())


def test_a_cold_list_prints_and_caches_what_one_process_does(
    cli: Any, repo: Path, split: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert cli(repo, "init").exit_code == 0
    for n in range(1, 7):
        assert cli(repo, "task", "add", f"task {n}").exit_code == 0
    assert cli(repo, "task", "modify", "2", "--depends", "5").exit_code == 0
    state = repo / ".git" / "michi"

    def cold(*args: str) -> tuple[str, Any, Any]:
        for name in (index.CACHE_NAME, LIST_CACHE):
            (state / name).unlink(missing_ok=True)
        index._last.clear()
        result = cli(repo, "task", "list", "--json", "--no-fetch", *args)
        assert result.exit_code == 0, result.stderr
        twocore.wait()
        cached = index.load_cache(state)
        assert cached is not None
        return result.stdout, list(cached.entries.items()), index.load_checked(state, LIST_CACHE)[1:]

    used: list[bool] = []
    built = coldtable.built

    def spy(*a: Any) -> Any:
        got = built(*a)
        used.append(got is not None)
        return got

    monkeypatch.setattr(coldtable, "built", spy)
    for args in ((), ("--all",)):
        two = cold(*args)
        monkeypatch.setenv("MICHI_ONE_CORE", "1")
        assert cold(*args) == two
        monkeypatch.delenv("MICHI_ONE_CORE")
    assert used == [True, False] * 2 and '"depends":[5]' in two[0]


def test_the_index_cache_is_written_in_pieces_as_the_joined_bytes(tmp_path: Path) -> None:
    """`save_cache` writes the records' dump without joining it to the head (it is ~17 MB at 50,000
    tasks): the file is `dump_parts`'s layout, and loads back whole."""
    import marshal

    entries = {".tasks/a.json": ("1" * 40, None, "x"), ".tasks/b.json": ("2" * 40, {"michi_id": 1}, None)}
    built = index.Index("t" * 40, entries)  # type: ignore[arg-type]
    index.save_cache(tmp_path, built)
    written = (tmp_path / index.CACHE_NAME).read_bytes()
    dumped = marshal.dumps(entries)
    assert len(written) == len(index.dump_parts("t" * 40, 2, [dumped]))
    assert written.startswith(b"".join(index.cache_pieces("t" * 40, 2, [dumped])[:2]))
    loaded = index.load_cache(tmp_path)
    assert loaded is not None and loaded.tree == "t" * 40 and loaded.entries == entries
