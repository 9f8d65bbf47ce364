"""Bounded, honest input: a task file too deep, too large, ill-typed, with NaN or an id out of range is
`corrupt_task` for that file alone (ADR 0006); agent names are one short printable line."""

from __future__ import annotations

import json
import os
import tracemalloc
from pathlib import Path

import pytest
from conftest import Remote, git, run_michi

from michi.agent import MAX_AGENT_LENGTH
from michi.tasks.model import MAX_ID, MAX_TASK_BYTES
from michi.workflow.journal import Entry
from michi.workflow.mutation import Change, Mutation
from michi.workflow.txn import _message

BAD_UUID = "0e4ab0a8-3c59-4d7e-9d2c-3b0d0f7a1c11"
HEAD = f'{{"uuid": "{BAD_UUID}", "description": "bad", "status": "pending", "entry": "20250101T000000Z"'

BAD_FILES = {
    "deep": HEAD + ', "michi_id": 9, "x": ' + "[" * 100_000 + "]" * 100_000 + "}",
    "deep_but_parsable": HEAD + ', "michi_id": 9, "x": ' + "[" * 100 + "]" * 100 + "}",
    "large": HEAD + ', "michi_id": 9, "x": "' + "a" * MAX_TASK_BYTES + '"}',
    "nan": HEAD + ', "michi_id": 9, "x": NaN}',
    "infinity": HEAD + ', "michi_id": 9, "x": 1e999}',
    "huge_integer": HEAD + ', "michi_id": 9, "x": ' + "9" * 5000 + "}",
    "id_out_of_range": HEAD + f', "michi_id": {10**30}}}',
    "id_just_over": HEAD + f', "michi_id": {MAX_ID + 1}}}',
    "id_as_text": HEAD + ', "michi_id": "9"}',
    "id_as_float": HEAD + ', "michi_id": 9.0}',
    "id_as_bool": HEAD + ', "michi_id": true}',
    "version_zero": HEAD + ', "michi_id": 9, "michi_version": 0}',
    "tags_not_strings": HEAD + ', "michi_id": 9, "tags": [1, 2]}',
    "description_not_text": f'{{"uuid": "{BAD_UUID}", "michi_id": 9, "description": ["x"], '
    '"status": "pending", "entry": "20250101T000000Z"}',
    "assignee_two_lines": HEAD + ', "michi_id": 9, "michi_assignee": "mallory\\nMichi-Agent: alice"}',
    # Valid JSON, but a lone surrogate is no character: no text holding it can be printed or written.
    "lone_surrogate": HEAD + ', "michi_id": 9, "project": "a\\ud800b"}',
    "lone_low_surrogate_in_extra": HEAD + ', "michi_id": 9, "x": {"k\\udfff": 1}}',
}


@pytest.fixture
def ready(cli, repo: Path) -> Path:
    assert cli(repo, "init").exit_code == 0
    assert cli(repo, "task", "add", "a good task").exit_code == 0
    return repo


def commit_by_hand(repo: Path, path: str, data: str) -> None:
    (repo / path).write_text(data)
    git(repo, "add", "-f", path)
    git(repo, "commit", "-qm", "a hand-made file")
    git(repo, "push", "-q", "origin", "main")


@pytest.mark.parametrize("kind", sorted(BAD_FILES))
def test_a_bad_task_file_is_corrupt_for_itself_alone(cli, ready: Path, remote: Remote, kind: str) -> None:
    bad_path = f".tasks/{BAD_UUID}.json"
    commit_by_hand(ready, bad_path, BAD_FILES[kind])
    listed = cli(ready, "task", "list", "--json")
    assert listed.exit_code == 0 and [t["id"] for t in listed.json()] == [1]
    doctor = cli(ready, "doctor", "--json")
    assert doctor.exit_code == 0, doctor.stdout
    assert [p["path"] for p in doctor.json()["problems"]] == [bad_path]
    assert cli(ready, "export", "--json").exit_code == 0
    shown = cli(ready, "task", "show", BAD_UUID, "--json")
    assert shown.exit_code == 4 and shown.json()["error"]["code"] == "corrupt_task"
    assert cli(ready, "task", "done", "1", "--json").json()["state"] == "done"
    added = cli(ready, "task", "add", "another", "--json")
    assert added.exit_code == 0 and added.json()["id"] == 2  # the counter never jumps past a bad id
    assert git(remote.bare, "show", "main:.michi/last-id") == "2"
    assert git(remote.bare, "show", f"main:{bad_path}") == BAD_FILES[kind]  # never rewritten


@pytest.mark.parametrize(
    "dates",
    [
        {"due": "00000101T000000Z"},
        {"scheduled": "99999999T999999Z"},
        {"due": "20251399T000000Z", "wait": "20250230T000000Z"},
        {"due": "2025010\u00b2T000000Z"},
        {"scheduled": 20250101, "due": ["x"]},
    ],
    ids=["year_zero", "all_nines", "month_13", "superscript_digit", "not_text"],
)
def test_a_date_taskwarrior_keeps_that_is_no_date_counts_as_none(
    cli, ready: Path, remote: Remote, tmp_path: Path, dates: dict[str, object]
) -> None:
    """`due`, `scheduled` and `wait` are Taskwarrior's, kept as a hand edit left them (an import refuses
    them): one that is no date gives the task no urgency term and no deferral, and stops nobody's `list`
    or `next`."""
    record = json.loads(HEAD + ', "michi_id": 9}') | dates
    commit_by_hand(ready, f".tasks/{BAD_UUID}.json", json.dumps(record))
    listed = cli(ready, "task", "list", "--json")
    assert listed.exit_code == 0, listed.stdout
    assert sorted(t["id"] for t in listed.json()) == [1, 9]
    assert cli(ready, "task", "list").exit_code == 0
    assert cli(ready, "status", "--json").exit_code == 0
    assert cli(ready, "task", "show", "9", "--json").exit_code == 0
    assert cli(ready, "task", "show", "9").exit_code == 0
    claimed = cli(ready, "--agent", "a1", "task", "next", "--claim", "--json")
    assert claimed.exit_code == 0, claimed.stdout
    record["uuid"] = "aaaaaaaa-1111-4111-8111-111111111111"
    (tmp_path / "tw.json").write_text(json.dumps([record]))
    imported = cli(ready, "import", str(tmp_path / "tw.json"), "--json")  # an import checks them (README)
    assert imported.exit_code == 2 and "is not a date" in imported.json()["error"]["message"], imported.stdout
    assert sorted(t["id"] for t in cli(ready, "task", "list", "--json").json()) == [1, 9]


@pytest.mark.parametrize(
    "args",
    [
        ("task", "add", "caf\udce9"),
        ("task", "add", "x", "--project", "\udcff"),
        ("task", "add", "x", "-t", "ok,\udcfe"),
        ("task", "annotate", "1", "note \udce9"),
        ("task", "modify", "1", "--description", "\udc80"),
        ("task", "modify", "1", "-t", "\udc80"),
    ],
    ids=["description", "project", "tag", "note", "new_description", "new_tag"],
)
def test_text_that_is_not_utf8_on_the_command_line_is_a_usage_error(
    ready: Path, remote: Remote, args: tuple[str, ...]
) -> None:
    """Bytes that are not UTF-8 reach Python as lone surrogates (surrogateescape), which no task file can
    hold: the command says which value is wrong, before the lock, and nothing lands."""
    before = remote.head()
    result = run_michi(ready, "--json", *args)  # a real process: the bytes come from its argv
    assert result.exit_code == 2, result.stdout + result.stderr
    error = result.json()["error"]
    assert error["code"] == "usage" and "UTF-8" in error["message"], error
    assert remote.head() == before
    assert git(ready, "status", "--porcelain") == ""


def test_two_files_with_one_uuid_are_named_never_picked_silently(cli, ready: Path, remote: Remote) -> None:
    """A project folder copied with its `.tasks` (a template, `cp -r`) holds a second file of the same
    uuid: naming that uuid must not change whichever file a dict kept last. It is ambiguous, and doctor
    names both files."""
    first = cli(ready, "task", "show", "1", "--json").json()
    uuid, path = first["uuid"], next((ready / ".tasks").glob("*/*.json"))
    copy = ready / "copy" / ".tasks" / uuid[:2] / f"{uuid}.json"
    copy.parent.mkdir(parents=True)
    copy.write_text(path.read_text().replace('"michi_id": 1', '"michi_id": 2'))
    git(ready, "add", "copy")
    commit_by_hand(ready, ".michi/last-id", "2\n")
    before = remote.head()
    for ref in (uuid, uuid[:8]):
        result = cli(ready, "task", "done", ref, "--json")
        assert result.exit_code == 2, result.stdout
        assert result.json()["error"]["code"] == "ambiguous_id"
    assert cli(ready, "task", "show", uuid, "--json").json()["error"]["code"] == "ambiguous_id"
    assert remote.head() == before
    problems = cli(ready, "doctor", "--json").json()["problems"]
    assert [p.get("uuid") for p in problems] == [uuid]
    assert sorted(problems[0]["paths"]) == sorted(
        [path.relative_to(ready).as_posix(), f"copy/.tasks/{uuid[:2]}/{uuid}.json"]
    )
    done = cli(ready, "task", "done", "2", "--json")  # its id is its own
    assert done.exit_code == 0 and done.json()["domain"] == "copy"


@pytest.mark.parametrize(
    "uuid",
    [
        "../../../x",
        "a/b",
        "x\ny",
        "ab",
        "aaaaaaaa-1111-4111-8111-11111111111z",
        "aaaaaaaa-1111-4111-8111-111111111111\n",
    ],
    ids=["climbs_out", "a_folder", "newline", "short", "not_hex", "trailing_newline"],
)
def test_an_imported_uuid_that_is_no_uuid_is_refused(
    cli, ready: Path, remote: Remote, tmp_path: Path, uuid: str
) -> None:
    """The uuid names the task's file: one that is no UUID (`../../x`, `a/b`) is a usage error naming it,
    before anything lands, never an exit 1 nor a file named by whatever the import said."""
    before = remote.head()
    record = {"uuid": uuid, "description": "x", "status": "pending", "entry": "20250101T000000Z"}
    (tmp_path / "tw.json").write_text(json.dumps([record]))
    result = cli(ready, "import", str(tmp_path / "tw.json"), "--json")
    assert result.exit_code == 2, result.stdout
    assert result.json()["error"]["code"] == "usage" and "uuid" in result.json()["error"]["message"]
    assert remote.head() == before


def test_a_counter_out_of_range_is_named_and_never_used(cli, ready: Path, remote: Remote) -> None:
    commit_by_hand(ready, ".michi/last-id", f"{10**30}\n")
    problems = cli(ready, "doctor", "--json").json()["problems"]
    assert [p["path"] for p in problems] == [".michi/last-id"]
    highest = problems[0]["highest_id"]  # the number the fix needs, named (the add's hint sends you here)
    assert highest >= 1 and f"the highest id in use is {highest}" in problems[0]["problem"]
    refused = cli(ready, "task", "add", "x", "--json")
    assert refused.exit_code == 4 and refused.json()["error"]["code"] == "corrupt_task"
    assert "michi doctor" in refused.json()["error"]["hint"]
    assert git(remote.bare, "show", "main:.michi/last-id") == str(10**30)
    assert cli(ready, "task", "done", "1", "--json").exit_code == 0  # other tasks keep working
    commit_by_hand(ready, ".michi/last-id", f"{highest}\n")  # the fix doctor words
    added = cli(ready, "task", "add", "after the fix", "--json")
    assert added.exit_code == 0 and added.json()["id"] == highest + 1


def test_a_counter_of_megabytes_is_refused_without_reading_it(cli, ready: Path, remote: Remote) -> None:
    """A committed `.michi/last-id` of 16 MB is corrupt from its 65th byte on: read no further (it was
    read whole, and decoded and stripped: ~5 copies of it at once)."""
    commit_by_hand(ready, ".michi/last-id", "7" * (16 << 20))
    assert cli(ready, "task", "list", "--json").exit_code == 0  # every module loaded before measuring
    tracemalloc.start()
    try:
        refused = cli(ready, "task", "add", "x", "--json")
        doctor = cli(ready, "doctor", "--json")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert refused.exit_code == 4 and refused.json()["error"]["code"] == "corrupt_task"
    assert "'7777" in refused.json()["error"]["message"]
    assert [p["path"] for p in doctor.json()["problems"]] == [".michi/last-id"]
    assert peak < 4 << 20, f"{peak:,} bytes at once"


def test_a_task_file_of_megabytes_is_corrupt_without_being_read_whole(cli, ready: Path) -> None:
    """A task file over the size any may hold is corrupt: its reader stops at the limit, whether the list
    reads it or a change names it."""
    path = f".tasks/{BAD_UUID[:2]}/{BAD_UUID}.json"
    (ready / path).parent.mkdir(exist_ok=True)
    assert cli(ready, "task", "list", "--json").exit_code == 0  # every module loaded before measuring
    commit_by_hand(ready, path, HEAD + ', "michi_id": 9, "x": "' + "a" * (16 << 20) + '"}')
    tracemalloc.start()
    try:
        listed = cli(ready, "task", "list", "--json")
        refused = cli(ready, "task", "done", BAD_UUID, "--json")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert listed.exit_code == 0 and [t["id"] for t in listed.json()] == [1]
    assert refused.exit_code == 4 and refused.json()["error"]["code"] == "corrupt_task"
    assert "larger than the" in refused.json()["error"]["message"]
    assert peak < 6 << 20, f"{peak:,} bytes at once"


def test_a_note_too_large_for_a_task_file_is_refused(cli, ready: Path, remote: Remote) -> None:
    before = remote.head()
    big = cli(ready, "task", "annotate", "1", "x" * MAX_TASK_BYTES, "--json")
    assert big.exit_code == 2 and big.json()["error"]["code"] == "task_too_large"
    assert remote.head() == before


FORGED = "mallory\nMichi-Agent: alice\nMichi-Task: 00000000-0000-4000-8000-000000000000"


@pytest.mark.parametrize(
    "name",
    [
        FORGED,
        "bot\r",
        "tab\tbot",
        "zero\u200bwidth",
        "line\u2028sep",
        " padded",
        "x" * (MAX_AGENT_LENGTH + 1),
    ],
)
def test_bad_agent_names_are_refused_wherever_they_enter(
    cli, ready: Path, remote: Remote, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, name: str
) -> None:
    before = remote.head()
    flag = cli(ready, "--agent", name, "task", "claim", "1", "--json")
    assert flag.exit_code == 2 and flag.json()["error"]["code"] == "bad_agent"
    with monkeypatch.context() as env:
        env.setenv("MICHI_AGENT", name)
        from_env = cli(ready, "task", "start", "1", "--json")
        assert from_env.exit_code == 2 and "MICHI_AGENT" in from_env.json()["error"]["message"]
    record = cli(ready, "export").json()[0]
    record.update(michi_state="in_progress", start=record["entry"], michi_assignee=name)
    (tmp_path / "tw.json").write_text(json.dumps([record]))
    imported = cli(ready, "import", str(tmp_path / "tw.json"), "--json")
    assert imported.exit_code == 2 and imported.json()["error"]["code"] == "bad_agent"
    assert remote.head() == before


def test_good_agent_names_reach_the_trailer_and_the_assignee(cli, ready: Path, remote: Remote) -> None:
    name = "agent-ü 7/x:y"
    assert cli(ready, "--agent", name, "task", "claim", "1", "--json").json()["assignee"] == name
    trailers = git(remote.bare, "log", "-1", "--format=%(trailers:key=Michi-Agent,valueonly)", "main")
    assert trailers == name


def test_every_trailer_value_is_one_line() -> None:
    """Even an agent name that got past validation (a journal written by an older michi) cannot forge."""
    entry = Entry(txn="0" * 32, mutation=Mutation("m:f"), command="task claim 1", agent=FORGED)
    change = Change("task claim 1", trailers={"Michi-Task": "u\nMichi-Txn: forged"})
    message = _message(change, entry, "host").decode()
    body = message.split("\n\n", 1)[1].splitlines()
    assert [line.split(":", 1)[0] for line in body] == [
        "Michi-Txn",
        "Michi-Host",
        "Michi-Agent",
        "Michi-Task",
    ]


@pytest.mark.parametrize(
    "branch",
    [
        "..",
        "a..b",
        "x.lock",
        "a/",
        "@{-1}",
        "main:evil",
        "*",
        "a\\b",
        "~1",
        "HEAD",
        "refs/heads/main",
        ".hidden",
        "a//b",
        "@",
    ],
)
def test_a_branch_git_could_not_name_is_a_config_error(
    cli, ready: Path, remote: Remote, monkeypatch: pytest.MonkeyPatch, branch: str
) -> None:
    """`branch` (`.michi.toml`, MICHI_BRANCH) becomes `refs/heads/<branch>` on the remote: a name git
    refuses is a configuration error (exit 2), not `remote_unreachable` (exit 5, which an agent waits out),
    and `HEAD` or `refs/heads/x` never creates a branch of that confusing name on everyone's remote."""
    before = git(remote.bare, "for-each-ref", "--format=%(refname)")
    monkeypatch.setenv("MICHI_BRANCH", branch)
    result = cli(ready, "task", "add", "x", "--json")
    assert result.exit_code == 2, result.stdout
    assert (
        result.json()["error"]["code"] == "bad_config" and "MICHI_BRANCH" in result.json()["error"]["message"]
    )
    assert git(remote.bare, "for-each-ref", "--format=%(refname)") == before


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (("--agent", "a", "task", "claim", "1", "--ttl", "1e12"), {}),
        (("--agent", "a", "task", "claim", "1"), {"MICHI_CLAIM_TTL": "1e300"}),
        (("--agent", "a", "task", "next", "--claim", "--ttl", "1e300"), {}),
        (("task", "add", "x"), {"MICHI_LOCK_TTL": "1e300"}),
        (("lock", "acquire", "--ttl", "1e300"), {}),
    ],
    ids=["claim_ttl_flag", "claim_ttl_env", "next_claim_ttl", "lock_ttl_env", "lock_acquire_ttl"],
)
def test_a_ttl_beyond_any_date_is_a_usage_error(
    cli,
    ready: Path,
    remote: Remote,
    monkeypatch: pytest.MonkeyPatch,
    args: tuple[str, ...],
    env: dict[str, str],
) -> None:
    """A claim or lease is written as an expiry date: one past year 9999 cannot be written as a date, so
    it once made a task file michi itself could not read back (the task vanished from `list`), or crashed
    with the lock half taken. It is refused before anything is written."""
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    before = remote.head()
    result = cli(ready, *args, "--json")
    assert result.exit_code == 2, result.stdout
    assert result.json()["error"]["code"] in ("usage", "bad_config")
    assert remote.head() == before
    monkeypatch.delenv("MICHI_LOCK_TTL", raising=False)
    monkeypatch.delenv("MICHI_CLAIM_TTL", raising=False)
    assert cli(ready, "lock", "status", "--json").json()["held"] is False
    assert [t["id"] for t in cli(ready, "task", "list", "--json").json()] == [1]


def test_a_config_nested_too_deep_is_a_config_error(cli, ready: Path) -> None:
    (ready / ".michi.toml").write_text("[michi]\nx = " + "[" * 100_000 + "]" * 100_000 + "\n")
    result = cli(ready, "task", "list", "--json")
    assert result.exit_code == 2 and result.json()["error"]["code"] == "bad_config"


def test_a_config_linked_out_of_the_repository_is_a_config_error(cli, ready: Path, tmp_path: Path) -> None:
    """`.michi.toml` pushed as a link to a file outside the repository: every clone took its settings
    from there (a remote of the link's choosing). A link to a file of the repository is read."""
    outside = tmp_path / "elsewhere.toml"
    outside.write_text('[michi]\nremote = "somewhere-else"\n')
    (ready / ".michi.toml").unlink()
    (ready / ".michi.toml").symlink_to(outside)
    refused = cli(ready, "task", "add", "x", "--json")
    assert refused.exit_code == 2 and refused.json()["error"]["code"] == "bad_config"
    assert "link out of the repository" in refused.json()["error"]["message"]
    (ready / "conf").mkdir()
    (ready / "conf" / "michi.toml").write_text("[michi]\nclaim_ttl = 60\n")
    (ready / ".michi.toml").unlink()
    (ready / ".michi.toml").symlink_to("conf/michi.toml")
    assert cli(ready, "task", "add", "x", "--json").exit_code == 0


def test_a_remote_that_is_not_there_names_the_remotes_there_are(
    cli, ready: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The names come from `remote.<name>.url` alone: a `remote.origin.fetch` was listed as "origin.f"."""
    monkeypatch.setenv("MICHI_REMOTE", "nowhere")
    refused = cli(ready, "task", "add", "x", "--json")
    assert refused.exit_code == 2 and "(it has origin)" in refused.json()["error"]["message"], refused.stdout


def test_a_config_of_megabytes_is_a_config_error_unread(cli, ready: Path) -> None:
    """A settings file of 64 MB (comments: valid TOML) is refused from its size: never read whole."""
    with open(ready / ".michi.toml", "w") as out:
        out.write("[michi]\n")
        out.writelines(["#" * 1023 + "\n"] * (64 << 10))
    tracemalloc.start()
    try:
        result = cli(ready, "task", "list", "--json")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.exit_code == 2 and result.json()["error"]["code"] == "bad_config"
    assert ".michi.toml: larger than" in result.json()["error"]["message"]
    assert peak < 8 << 20, f"{peak:,} bytes at once"


@pytest.mark.parametrize(
    "text",
    [
        '[{"uuid": "aaaaaaaa-1111-4111-8111-111111111111", "description": "x", "status": "pending", '
        '"entry": "20250101T000000Z", "estimate": NaN}]',
        '[{"uuid": "aaaaaaaa-1111-4111-8111-111111111111", "description": "x", "status": "pending", '
        '"entry": "20250101T000000Z", "x": ' + "[" * 100_000 + "]" * 100_000 + "}]",
        '[{"uuid": "aaaaaaaa-1111-4111-8111-111111111111", "description": "x", "status": "pending", '
        '"entry": "20250101T000000Z", "x": ' + "[" * 50 + "]" * 50 + "}]",
        '[{"uuid": "aaaaaaaa-1111-4111-8111-111111111111", "description": "x\\udc00", "status": "pending", '
        '"entry": "20250101T000000Z"}]',
        '{"uuid": "aaaaaaaa-1111-4111-8111-111111111111", "description": "x", "status": "pending", '
        '"entry": "20250101T000000Z", "tags": ["\\ud83d"]}',
    ],
    ids=["nan", "deep", "deeper_than_the_cap", "lone_surrogate", "lone_surrogate_in_a_line"],
)
def test_an_import_file_beyond_the_caps_is_refused(
    cli, ready: Path, remote: Remote, tmp_path: Path, text: str
) -> None:
    before = remote.head()
    (tmp_path / "tw.json").write_text(text)
    result = cli(ready, "import", str(tmp_path / "tw.json"), "--json")
    assert result.exit_code == 2 and result.json()["error"]["code"] == "usage", result.stdout
    assert remote.head() == before


def test_a_task_file_that_is_a_symlink_is_named_one(cli, ready: Path, remote: Remote) -> None:
    """A symlink committed where a task file goes: git stores the path it points to as its content, and
    `doctor` called it "not valid JSON". It says what it is; the other tasks keep working."""
    real = next((ready / ".tasks").glob("*/*.json"))
    link = ready / ".tasks" / BAD_UUID[:2] / f"{BAD_UUID}.json"
    link.parent.mkdir(exist_ok=True)
    link.symlink_to(os.path.relpath(real, link.parent))
    git(ready, "add", "-f", link.relative_to(ready).as_posix())
    git(ready, "commit", "-qm", "a hand-made symlink")
    git(ready, "push", "-q", "origin", "main")
    problems = cli(ready, "doctor", "--json").json()["problems"]
    assert [p["path"] for p in problems] == [link.relative_to(ready).as_posix()]
    assert "a symbolic link, not a task file" in problems[0]["problem"]
    assert cli(ready, "task", "done", "1", "--json").exit_code == 0
