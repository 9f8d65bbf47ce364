"""Odd but valid TOML in `.michi.toml`, and numbers past what michi's clocks can add: a usage error
(exit 2, `bad_config`) naming the file or variable, never exit 1."""

from __future__ import annotations

import json

import pytest

from tests.conftest import Remote, git, run_michi


@pytest.mark.parametrize(
    "text",
    [
        "michi = 5\n",
        "[[michi]]\nlock_ttl = 5\n",
        "lock_ttl = 5\n[michi]\npush_retries = 2\n",
        "[michi]\npush_retries = inf\n",
        "[michi]\npush_retries = 1e400\n",
        "[michi]\nremote_timeout = 1e300\n",
    ],
)
def test_an_odd_config_file_is_a_usage_error_naming_it(remote: Remote, text: str) -> None:
    work = remote.clone("work")
    assert run_michi(work, "init").exit_code == 0
    (work / ".michi.toml").write_text(text)

    res = run_michi(work, "--json", "task", "list")

    assert res.exit_code == 2, res.stdout + res.stderr
    error = json.loads(res.stdout)["error"]
    assert error["code"] == "bad_config" and error["message"].startswith(".michi.toml: "), error


def test_a_timeout_past_ten_years_in_the_environment_is_a_usage_error(remote: Remote) -> None:
    work = remote.clone("work")
    assert run_michi(work, "init").exit_code == 0

    res = run_michi(work, "--json", "task", "list", "--fetch", env={"MICHI_REMOTE_TIMEOUT": "1e300"})

    assert res.exit_code == 2, res.stdout + res.stderr
    assert "MICHI_REMOTE_TIMEOUT" in json.loads(res.stdout)["error"]["message"]
    assert git(work, "status", "--porcelain") == ""
