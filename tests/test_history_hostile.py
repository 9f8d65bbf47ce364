"""What others can put in a clone's history and state folder never breaks `stats`, `lock stats` or `watch`
(ADR 0013): a commit dated in the far future or past year 9999, a `--since` no day can hold, a damaged
line of the lock's event log, a link put in place of a state marker (`synced`, `contended`), an interval
`time.sleep` cannot take."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from conftest import Remote, git, run_michi

TODAY_FORMAT = "%Y-%m-%d"


def _valid_json(text: str) -> object:
    """`text` as JSON that every reader takes: bare NaN or Infinity is refused."""

    def refuse(constant: str) -> object:
        raise AssertionError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def _hand_done(repo: Path, date: str) -> None:
    """A michi-looking `done` commit dated `date` (a clone with a broken clock, or anyone's hand), pushed."""
    path = next(p for p in git(repo, "ls-files", ".tasks").splitlines() if p.endswith(".json"))
    task = json.loads((repo / path).read_text())
    (repo / path).write_text(json.dumps({**task, "status": "completed"}))
    message = "michi: task done 1\n\nMichi-Txn: 0123\nMichi-Agent: eve\n"
    git(repo, "commit", "-qam", message, "--no-verify", env={"GIT_COMMITTER_DATE": date})
    git(repo, "push", "-q", "origin", "main")


@pytest.mark.parametrize(
    "date",
    [
        "@4102444800 +0000",  # 2100-01-01: a row for each day until then (year 9999: three million)
        "@300000000000 +0000",  # year 11476: no Python date holds it (exit 1, for every clone)
    ],
    ids=["year-2100", "year-11476"],
)
def test_a_commit_dated_after_today_counts_on_today(cli, repo: Path, date: str) -> None:
    assert cli(repo, "init").exit_code == 0
    assert cli(repo, "task", "add", "one").exit_code == 0
    _hand_done(repo, date)
    result = cli(repo, "--json", "stats")
    assert result.exit_code == 0, result.stdout
    data = _valid_json(result.stdout)
    assert isinstance(data, dict)
    today = time.strftime(TODAY_FORMAT, time.gmtime())
    assert data["days"] == [{"date": today, "opened": 1, "closed": 1}]
    assert data["totals"] == {"opened": 1, "closed": 1} and data["agents"]["eve"]["completions"] == 1
    human = cli(repo, "stats")
    assert human.exit_code == 0 and today in human.stdout


@pytest.mark.parametrize(
    "since",
    [
        "0001-01-01",
        "100000000w",
        "99999999999999999999999d",
        "1" + "0" * 5000 + "d",  # more digits than Python reads as a number
        "0001-01-01T00:00:00+14:00",  # in year 0
        "9999-12-31T23:59:59-14:00",  # in year 10000
    ],
    ids=["year-1", "weeks", "days", "digits", "year-0", "year-10000"],
)
def test_a_since_no_day_can_hold_is_bad_date(cli, repo: Path, since: str) -> None:
    assert cli(repo, "init").exit_code == 0
    assert cli(repo, "task", "add", "one").exit_code == 0
    result = cli(repo, "--json", "stats", "--since", since)
    assert result.exit_code == 2, result.stdout
    error = result.json()["error"]
    assert error["code"] == "bad_date" and "--since" in error["message"] and "\n" not in error["message"]
    first = cli(repo, "--json", "stats", "--since", "1970-01-01")
    assert first.exit_code == 0 and first.json()["totals"]["opened"] == 1


@pytest.mark.parametrize(
    "line",
    [
        '{"t":"x","kind":"hold","hold":1}',
        '{"t":1,"kind":"hold","hold":null}',
        '{"t":1,"kind":"hold","wait":[1]}',
        '{"t":1,"kind":"hold","hold":1e999}',
        '{"t":1,"kind":"hold","hold":NaN}',
        '{"t":-Infinity,"kind":"acquire"}',
        '{"t":1,"kind":"release","hold":1' + "0" * 400 + "}",  # no float holds it
    ],
    ids=["t-text", "hold-null", "wait-list", "hold-overflow", "hold-nan", "t-infinity", "hold-400-digits"],
)
def test_a_damaged_lock_event_line_is_left_out(cli, repo: Path, line: str) -> None:
    assert cli(repo, "init").exit_code == 0
    assert cli(repo, "task", "add", "one").exit_code == 0
    before = cli(repo, "--json", "lock", "stats").json()
    with (repo / ".git" / "michi" / "lock-events.jsonl").open("a") as log:
        log.write(line + "\n")
    for command in (("lock", "stats"), ("stats",)):
        result = cli(repo, "--json", *command)
        assert result.exit_code == 0, result.stdout
        data = _valid_json(result.stdout)
        assert isinstance(data, dict)
        numbers = data if command == ("lock", "stats") else data["lock"]
        for key in ("acquisitions", "wait", "hold", "since"):
            assert numbers[key] == before[key], key
    assert cli(repo, "lock", "stats").exit_code == 0


def _user_file(root: Path, name: str) -> Path:
    """A file of the user's outside the repository, last changed in 2001."""
    folder = root / "user"
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text("precious\n")
    os.utime(path, (978307200, 978307200))
    return path


def _linked(marker: Path, to: Path) -> None:
    marker.unlink(missing_ok=True)
    marker.symlink_to(to)


def _is_michis_marker(marker: Path) -> bool:
    return not marker.is_symlink() and marker.is_file() and time.time() - marker.lstat().st_mtime < 60


def test_a_synced_marker_that_is_a_link_is_replaced_never_written_through(cli, remote: Remote) -> None:
    repo = remote.clone("work")
    assert cli(repo, "init").exit_code == 0
    marker = repo / ".git" / "michi" / "synced"
    notes = _user_file(remote.root, "notes.txt")
    _linked(marker, notes)
    assert cli(repo, "task", "add", "x").exit_code == 0  # a transaction's fetch touches the marker
    assert notes.stat().st_mtime == 978307200 and notes.read_text() == "precious\n"
    assert _is_michis_marker(marker)

    dangling = remote.root / "user" / "made-by-michi"
    _linked(marker, dangling)
    assert cli(repo, "task", "list", "--fetch").exit_code == 0  # a read's fetch touches it too
    assert not dangling.exists() and _is_michis_marker(marker)


def test_a_synced_marker_is_read_by_its_own_time_not_a_linked_files(cli, remote: Remote) -> None:
    """A link to a file changed just now made a clone that never synced look freshly synced: its reads
    answered from a stale state without fetching."""
    repo = remote.clone("work")
    assert cli(repo, "init").exit_code == 0
    fresh = _user_file(remote.root, "fresh.txt")
    os.utime(fresh)
    _linked(repo / ".git" / "michi" / "synced", fresh)
    listed = cli(repo, "task", "list")
    assert listed.exit_code == 0
    assert "fetched just now" in listed.stderr, listed.stderr  # no marker of michi's: never synced
    assert _is_michis_marker(repo / ".git" / "michi" / "synced")


def test_a_contended_marker_that_is_a_link_is_replaced(cli, remote: Remote) -> None:
    """A push refused because another clone landed first touches `contended`."""
    first, second = remote.clone("first"), remote.clone("second")
    assert cli(first, "init").exit_code == 0
    assert cli(second, "task", "list", "--fetch").exit_code == 0
    assert cli(first, "task", "add", "from the first clone").exit_code == 0
    marker = second / ".git" / "michi" / "contended"
    dangling = remote.root / "user" / "made-by-michi"
    dangling.parent.mkdir()
    _linked(marker, dangling)
    added = cli(second, "--json", "task", "add", "from the second clone")
    assert added.exit_code == 0, added.stdout
    assert not dangling.exists() and _is_michis_marker(marker)  # its first push was refused: touched


@pytest.mark.parametrize("interval", ["1e10", "inf"])
def test_a_watch_interval_sleep_cannot_take_is_usage(repo: Path, interval: str) -> None:
    result = run_michi(repo, "watch", "--interval", interval, timeout=30)
    assert result.exit_code == 2, result.stderr
    assert "--interval" in result.stderr and "ten years" in result.stderr
    assert "unexpected error" not in result.stderr
