"""`michi status`, `status --check` and `stats` against a real swarm: agents in separate processes and clones,
a claim left to expire, the lock held by a sleeping `lock run`, offline work, a corrupt task file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Remote, git, run_michi

from michi.tasks.model import parse_tw_date


def ok(cwd: Path, *args: str) -> dict:
    result = run_michi(cwd, "--json", *args)
    assert result.exit_code == 0, result.stdout + result.stderr
    return json.loads(result.stdout)


def until(deadline: float) -> None:
    """Let the clock pass `deadline` (a claim's expiry is an instant, not something to poll for)."""
    time.sleep(max(0.0, deadline - time.time()) + 0.05)


@pytest.fixture
def held(remote: Remote) -> Iterator[tuple[Path, subprocess.Popen[str]]]:
    """A clone whose repo lock is held by `michi lock run -- sleep`, started once the lock is taken."""
    work = remote.clone("held")
    ok(work, "init")
    proc = subprocess.Popen(
        [sys.executable, "-m", "michi", "lock", "run", "--", "sh", "-c", "echo ready; exec sleep 120"],
        cwd=work,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"  # the lock is held now
    yield work, proc
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)


def test_status_reports_exactly_what_the_swarm_did(cli, remote: Remote, held) -> None:
    work, holder = held
    other = remote.clone("other")
    a1, a2 = {"MICHI_AGENT": "a1"}, {"MICHI_AGENT": "a2"}
    for n in range(1, 6):
        assert cli(other, "task", "add", f"task {n}").exit_code == 0
    # a1 claims the most urgent ready task (1) and finishes it; a2, in the other clone, does task 2.
    assert run_michi(other, "--json", "task", "next", "--claim", env=a1).json()["id"] == 1
    assert run_michi(other, "--json", "task", "done", "1", env=a1).exit_code == 0
    assert run_michi(other, "--json", "task", "claim", "2", env=a2).exit_code == 0
    assert run_michi(other, "--json", "task", "done", "2", env=a2).exit_code == 0
    short = run_michi(other, "--json", "task", "claim", "3", "--ttl", "1", env=a2).json()  # left to expire
    assert run_michi(other, "--json", "task", "claim", "4", env=a1).exit_code == 0
    assert run_michi(other, "--json", "task", "claim", "5", env=a1).exit_code == 0
    assert run_michi(other, "--json", "task", "release", "5", env=a1).exit_code == 0
    until(parse_tw_date(short["claim_expires"]))

    status = run_michi(work, "--json", "status", "--fetch")  # no lock: it answers while the lock is held
    assert status.exit_code == 0, status.stderr
    data = status.json()
    lock = data["lock"]
    assert lock["held"] and not lock["stale"] and lock["holder"]["pid"] == holder.pid
    assert "sleep 120" in lock["holder"]["command"] and lock["waiters"] == []
    assert 0 <= lock["age"] < 300 and 0 < lock["time_left"] <= 300 and "fence" in lock
    assert data["remote_lock"]["held"] is False  # --fetch asks the remote for its lock too
    assert {k: data["tasks"][k] for k in ("todo", "in_progress", "done", "total", "unreadable")} == {
        "todo": 1, "in_progress": 2, "done": 2, "total": 5, "unreadable": 0,
    }  # fmt: skip
    claims = {c["id"]: c for c in data["claims"]}
    assert set(claims) == {3, 4}
    assert claims[3]["agent"] == "a2" and claims[3]["expired"] and claims[3]["lease_left"] < 0
    assert claims[4]["agent"] == "a1" and not claims[4]["expired"] and claims[4]["lease_left"] > 3000
    assert data["claims"][0]["id"] == 3  # expired claims first
    assert data["oldest_in_progress"]["id"] == 3
    sync = data["sync"]
    # This clone only fetched: its local branch is behind by the other clone's 13 commits.
    assert (sync["remote"], sync["branch"], sync["ahead"], sync["behind"]) == ("origin", "main", 0, 13)
    assert sync["since_sync"] is not None and sync["remote_tip"] == remote.head()
    assert data["pending"]["count"] == 0

    human = run_michi(work, "status")
    assert human.exit_code == 0 and "EXPIRED" in human.stdout and f"PID {holder.pid}" in human.stdout

    # --check: the expired claim (16) and, past --max-lock-age, the lock (8); one line each.
    strict = run_michi(work, "--json", "status", "--check", "--max-lock-age", "0")
    assert strict.exit_code == 8 | 16
    problems = strict.json()
    assert [p["code"] for p in problems] == ["lock_held_too_long", "claim_expired"]
    assert problems[1]["id"] == 3 and problems[1]["agent"] == "a2"
    lenient = run_michi(work, "status", "--check", "--max-claim-overdue", "3600")
    assert lenient.exit_code == 0 and lenient.stdout.strip() == "healthy: no problems"
    text = run_michi(work, "status", "--check")
    assert text.exit_code == 16 and text.stdout.splitlines() == [
        next(line for line in text.stdout.splitlines() if line.startswith("claim_expired: task 3"))
    ]


def test_check_detects_offline_work_and_corrupt_files_and_reaps(cli, remote: Remote, repo: Path) -> None:
    assert cli(repo, "init").exit_code == 0
    assert cli(repo, "task", "add", "one").exit_code == 0
    healthy = run_michi(repo, "--json", "status", "--check")
    assert healthy.exit_code == 0 and healthy.json() == []

    gone = {"MICHI_AGENT": "gone"}
    short = run_michi(repo, "--json", "task", "claim", "1", "--ttl", "1", env=gone).json()
    assert run_michi(repo, "task", "add", "offline one", "--offline").exit_code == 0
    pending = ok(repo, "status")["pending"]
    assert pending["count"] == 1 and pending["operations"][0]["state"] == "offline"
    assert "offline one" in pending["operations"][0]["command"] and pending["oldest_age"] >= 0
    until(parse_tw_date(short["claim_expires"]))
    both = run_michi(repo, "--json", "status", "--check")
    assert both.exit_code == 16 | 32
    assert [p["code"] for p in both.json()] == ["claim_expired", "offline_unpushed"]
    lenient = ("--max-unsynced", "3600", "--max-claim-overdue", "3600")
    assert run_michi(repo, "status", "--check", *lenient).exit_code == 0
    assert run_michi(repo, "status", "--check", "--max-unsynced", "3600").exit_code == 16

    # --reap releases the expired claim; its transaction also pushes the offline work.
    reaped = run_michi(repo, "status", "--check", "--reap")
    assert reaped.exit_code == 0, reaped.stdout + reaped.stderr
    assert reaped.stdout.splitlines() == ["reaped 1 expired claim(s): task 1", "healthy: no problems"]
    assert ok(repo, "task", "show", "1")["state"] == "todo"

    # A corrupt task file pushed by hand from another clone.
    hand = remote.clone("hand")
    (hand / ".tasks" / "broken.json").write_text("{not json\n")
    git(hand, "add", ".tasks/broken.json")
    git(hand, "commit", "-qm", "hand edit")
    git(hand, "push", "-q")
    bad = run_michi(repo, "--json", "status", "--check", "--fetch")
    assert bad.exit_code == 64 and [p["code"] for p in bad.json()] == ["corrupt_task_file"]
    assert bad.json()[0]["path"] == ".tasks/broken.json"
    assert bad.json()[0]["message"].count(".tasks/broken.json") == 1  # the path once, not "path: path: ..."
    assert run_michi(repo, "status").exit_code == 0  # a status still shows, and counts it
    assert ok(repo, "status")["tasks"]["unreadable"] == 1
    git(hand, "rm", "-q", ".tasks/broken.json")
    git(hand, "commit", "-qm", "remove it")
    git(hand, "push", "-q")
    assert run_michi(repo, "status", "--check", "--fetch").exit_code == 0


def test_stats_counts_claims_completions_expiries_and_days(cli, repo: Path) -> None:
    """The history is what is under test here, so the agents run in-process (the swarm test above runs
    them as real processes)."""
    assert cli(repo, "init").exit_code == 0
    for n in range(1, 5):
        assert cli(repo, "task", "add", f"task {n}").exit_code == 0
    a1, a2 = {"MICHI_AGENT": "a1"}, {"MICHI_AGENT": "a2"}

    def ok_env(*args: str, env: dict[str, str]) -> bool:
        return cli(repo, "--agent", env["MICHI_AGENT"], *args).exit_code == 0

    assert ok_env("task", "claim", "1", env=a1) and ok_env("task", "done", "1", env=a1)
    assert ok_env("task", "claim", "2", env=a2) and ok_env("task", "review", "2", env=a2)
    assert ok_env("task", "done", "2", env=a2)
    short = cli(repo, "--json", "--agent", "a2", "task", "claim", "3", "--ttl", "1").json()
    assert ok_env("task", "claim", "4", env=a1) and ok_env("task", "release", "4", env=a1)
    until(parse_tw_date(short["claim_expires"]))
    assert ok_env("task", "claim", "3", env=a1)  # takes over a2's expired claim
    assert ok_env("task", "done", "3", env=a1)
    assert cli(repo, "task", "delete", "4").exit_code == 0

    data = ok(repo, "stats")  # as a separate process
    agents = data["agents"]
    assert set(agents) == {"a1", "a2"}
    assert {k: agents["a1"][k] for k in ("claims", "completions", "expired", "released")} == {
        "claims": 3, "completions": 2, "expired": 0, "released": 1,
    }  # fmt: skip
    assert {k: agents["a2"][k] for k in ("claims", "completions", "expired", "released")} == {
        "claims": 2, "completions": 1, "expired": 1, "released": 0,
    }  # fmt: skip
    assert agents["a1"]["claim_to_done"]["count"] == 2 and agents["a2"]["claim_to_done"]["count"] == 1
    assert agents["a1"]["claim_to_done"]["median"] >= 0 and agents["a1"]["claim_to_done"]["p90"] >= 0
    assert data["totals"] == {"opened": 4, "closed": 4}  # 3 done, 1 deleted
    assert sum(d["opened"] for d in data["days"]) == 4 and data["days"][-1]["date"] == time.strftime(
        "%Y-%m-%d", time.gmtime()
    )
    assert data["lock"]["acquisitions"] >= 12 and "wait" in data["lock"]

    only = cli(repo, "--json", "--agent", "a2", "stats").json()
    assert set(only["agents"]) == {"a2"} and only["totals"]["closed"] == 1
    later = cli(repo, "--json", "stats", "--since", "2999-01-01").json()
    assert later["agents"] == {} and later["totals"] == {"opened": 0, "closed": 0}
    human = cli(repo, "stats")
    assert human.exit_code == 0 and "per day" in human.stdout and "█" in human.stdout
    bad = cli(repo, "--json", "stats", "--since", "yesterday-ish")
    assert bad.exit_code == 2 and bad.json()["error"]["code"] == "bad_date"


def test_status_outside_a_repository_and_reap_without_check(tmp_path: Path, repo: Path) -> None:
    outside = run_michi(tmp_path, "--json", "status")
    assert outside.exit_code == 2 and outside.json()["error"]["code"] == "not_a_repository"
    misuse = run_michi(repo, "--json", "status", "--reap")
    assert misuse.exit_code == 2 and "--check" in misuse.json()["error"]["message"]
    assert os.path.isdir(repo)


def test_status_shows_the_remote_lock_once_this_clone_uses_it(remote: Remote) -> None:
    work = remote.clone("remote-locked")
    ok(work, "init")
    assert ok(work, "status")["remote_lock"] is None  # never used here: no round trip to the remote
    token = ok(work, "lock", "acquire", "--remote", "--ttl", "600")["token"]
    data = ok(work, "status")["remote_lock"]
    assert data["held"] and data["fence"] == 1 and data["holder"]["pid"] > 0 and not data["stale"]
    human = run_michi(work, "status")
    assert "remote lock" in human.stdout and "fence 1" in human.stdout
    ok(work, "lock", "release", "--remote", "--token", token)
    assert ok(work, "status")["remote_lock"]["held"] is False


HOSTILE = "\x1b[2J\x1b]0;PWNED\x07"


def test_no_escape_from_a_lock_record_or_a_claim_reaches_the_terminal(cli, repo: Path) -> None:
    """The lock's record is a file any process can write, and a claimed task's description anyone's text:
    `status` shows both, and the pre-commit hook names the holder when it refuses a commit."""
    ok(repo, "init")
    ok(repo, "task", "add", f"claimed {HOSTILE}")
    ok(repo, "--agent", "bot", "task", "claim", "1")
    assert run_michi(repo, "hook", "install").exit_code == 0
    token = ok(repo, "lock", "acquire", "--pid", str(os.getpid()))["token"]
    record_path = repo / ".michi.lock" / "owner.json"
    record = json.loads(record_path.read_text())
    record.update(host=f"vm{HOSTILE}", agent=f"ag{HOSTILE}", command=f"cmd{HOSTILE}")
    record_path.write_text(json.dumps(record))
    try:
        shown = cli(repo, "status")
        assert shown.exit_code == 0 and "PWNED" in shown.stdout, shown.stdout
        (repo / "notes.txt").write_text("mine\n")
        git(repo, "add", "notes.txt")
        refused = subprocess.run(["git", "commit", "-qm", "notes"], cwd=repo, capture_output=True, text=True)
        assert refused.returncode != 0 and "PWNED" in refused.stderr, refused.stderr
        for text in (shown.stdout + shown.stderr, refused.stderr):
            assert "\x1b" not in text and "\x07" not in text, text
    finally:
        assert run_michi(repo, "lock", "release", "--token", token).exit_code == 0


def test_status_and_stats_touch_no_network_unless_asked(cli, repo: Path) -> None:
    """ADR 0013: a cron `status --check` against a hanging remote must not wait on it once the last sync is
    older than `read_max_age`; `--fetch` asks for the network."""
    assert cli(repo, "init").exit_code == 0
    git(repo, "remote", "set-url", "origin", str(repo.parent / "gone.git"))
    env = {"MICHI_READ_MAX_AGE": "0"}
    for args in (("status",), ("status", "--check"), ("stats",)):
        res = run_michi(repo, *args, env=env)
        assert res.exit_code in (0, 32), res.stderr  # 32: offline work, never synced: not the network's
        assert "could not refresh" not in res.stderr and "gone.git" not in res.stderr, (args, res.stderr)
    fetched = run_michi(repo, "status", "--fetch", env=env)
    assert fetched.exit_code != 0 and "gone.git" in fetched.stderr
