"""Units under status and stats: the history replay, the log parser, --since dates, the fast path's
parser, the exit-status bits, and the lock as status reads it (a hand-made record with a fence)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from lockkit import dead_pid, write_record

from michi.commands.stats import parse_since
from michi.commands.status_check import PROBLEM_BITS, CheckReport
from michi.errors import ExitCode, UsageError
from michi.git.trail import LogEntry, _parse
from michi.tasks import activity

U1, U2, U3 = "11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222", "3" * 8
DAY = 86400.0


def entry(t: float, subject: str, agent: str | None, *uuids: str, added: bool = False) -> LogEntry:
    trailers = {"Michi-Txn": "abc", "Michi-Host": "h"}
    if agent:
        trailers["Michi-Agent"] = agent
    if len(uuids) == 1:
        trailers["Michi-Task"] = uuids[0]
    files = [("A" if added else "M", f".tasks/{u}.json") for u in uuids]
    return LogEntry("0" * 40, t, f"michi: {subject}", trailers, files)


def test_replay_cycles_takeovers_reaps_and_releases() -> None:
    log = [
        entry(0, "task add 1", None, U1, added=True),
        entry(1, "import 2 tasks", None, U2, U3, added=True),
        entry(10, "task claim 1", "a1", U1),
        entry(15, "task renew 1", "a1", U1),
        entry(40, "task done 1", "a1", U1),  # a1: one cycle of 30 s
        entry(50, "task claim 2", "a2", U2),
        entry(60, "task claim 2", "a1", U2),  # a2's claim had expired: a1 takes it over
        entry(70, "task stop 2", "a1", U2),  # a1 gives up unfinished
        entry(80, "task claim 3", "a2", U3),
        entry(DAY + 5, "task reap 1", "cron", U3),  # more than one task would name none in the trailer
        entry(DAY + 6, "task delete 2", None, U2),
    ]
    log[9].trailers.pop("Michi-Task")
    hand = LogEntry("1" * 40, 99, "hand edit", {}, [("M", f".tasks/{U1}.json")])
    state = activity.replay(activity.events([*log, hand]), since=None, agent=None)
    figures = {name: f.to_json() for name, f in state.agents.items()}
    assert set(figures) == {"a1", "a2"}  # the reaper and the person only acted on others' claims
    assert (figures["a1"]["claims"], figures["a1"]["completions"], figures["a1"]["released"]) == (2, 1, 1)
    assert figures["a1"]["claim_to_done"] == {"count": 1, "median": 30.0, "p90": 30.0}
    assert (figures["a2"]["claims"], figures["a2"]["expired"], figures["a2"]["completions"]) == (2, 2, 0)
    assert state.series(DAY + 10) == [
        {"date": "1970-01-01", "opened": 3, "closed": 1},
        {"date": "1970-01-02", "opened": 0, "closed": 1},
    ]
    later = activity.replay(activity.events(log), since=DAY, agent=None)
    assert set(later.agents) == {"a2"} and later.agents["a2"].expired == 1  # the reap falls after --since
    assert later.series(DAY + 10) == [{"date": "1970-01-02", "opened": 0, "closed": 1}]
    mine = activity.replay(activity.events(log), since=None, agent="a1")
    assert set(mine.agents) == {"a1"} and sum(mine.closed.values()) == 1 and not mine.opened


def test_log_parser_reads_trailers_and_file_status() -> None:
    out = (
        "\x1eaaa\x1f100\x1fmichi: task add 1\x1fMichi-Txn: t1\nMichi-Agent: bot\n\x1f\0\nA\0d/.tasks/u.json\0"
        "\x1ebbb\x1f200\x1fmichi: task reap 2\x1fMichi-Txn: t2\n\x1f\0\nM\0.tasks/x.json\0M\0.tasks/y.json\0"
        "\x1eccc\x1f300\x1fplain commit\x1f\x1f"
    )
    first, second, third = _parse(out)
    assert (first.commit, first.time, first.trailers["Michi-Agent"]) == ("aaa", 100.0, "bot")
    assert first.files == [("A", "d/.tasks/u.json")]
    assert second.files == [("M", ".tasks/x.json"), ("M", ".tasks/y.json")]
    assert third.trailers == {} and third.files == []


def test_since_accepts_dates_times_and_ages() -> None:
    now = 1_800_000_000.0
    assert parse_since("2025-01-31", now) == 1738281600.0
    assert parse_since("2025-01-31T12:00:00Z", now) == 1738281600.0 + 43200
    assert parse_since("20250131T120000Z", now) == 1738281600.0 + 43200
    assert parse_since("7d", now) == now - 7 * DAY and parse_since("12h", now) == now - 43200
    with pytest.raises(UsageError) as bad:
        parse_since("last tuesday", now)
    assert bad.value.code == "bad_date" and bad.value.exit_code == ExitCode.USAGE


def test_exit_bits_name_each_problem_and_never_mean_another_exit_code() -> None:
    reserved = {int(code) for code in ExitCode} - {0}
    for n in range(1, len(PROBLEM_BITS) + 1):
        for codes in itertools.combinations(PROBLEM_BITS, n):
            report = CheckReport([{"code": c, "message": c} for c in codes])
            assert report.exit_code not in reserved and 0 < report.exit_code < 256
            assert {c for c, bit in PROBLEM_BITS.items() if report.exit_code & bit} == set(codes)
    assert CheckReport([]).exit_code == 0


def test_status_shows_a_stale_lock_and_its_fence(cli, local_repo: Path) -> None:
    assert cli(local_repo, "init").exit_code == 0
    lock_dir = write_record(local_repo, pid=dead_pid())
    record = json.loads((lock_dir / "owner.json").read_text())
    (lock_dir / "owner.json").write_text(json.dumps({**record, "fence": 7}))
    data = cli(local_repo, "--json", "status").json()
    lock = data["lock"]
    assert lock["held"] and lock["stale"] and lock["reason"] == "dead" and lock["fence"] == 7
    assert "STALE" in cli(local_repo, "status").stdout
    problems = cli(local_repo, "--json", "status", "--check", "--max-lock-age", "0")
    assert problems.exit_code == 8 and problems.json()[0]["stale"] is True
    assert data["sync"]["remote"] is None and data["sync"]["ahead"] is None  # no remote: local only


def test_warm_status_json_imports_neither_rich_nor_gitpython(cli, repo: Path) -> None:
    import subprocess
    import sys

    assert cli(repo, "init").exit_code == 0
    assert cli(repo, "task", "add", "a").exit_code == 0
    assert cli(repo, "--json", "status").exit_code == 0  # warms the list cache
    probe = (
        "import json, sys\nfrom michi.cli.main import main\ncode = main(sys.argv[1:])\n"
        "print(json.dumps([code, 'rich' in sys.modules, 'git' in sys.modules]), file=sys.stderr)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe, "--json", "status"], cwd=repo, capture_output=True, text=True
    )
    assert json.loads(proc.stderr.strip().splitlines()[-1]) == [0, False, False]
