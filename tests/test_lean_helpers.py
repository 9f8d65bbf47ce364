"""The helpers that replace a standard module on the start-up path (ADR 0010) give what it gives."""

from __future__ import annotations

import calendar
import os
import random
import socket
import time
import tomllib
import uuid
from pathlib import Path

import pytest

from michi import config, unique
from michi.atomic import write_atomic, write_cache
from michi.host import hostname
from michi.tasks.model import DATE_FORMAT, parse_tw_date


def _strptime(text: str) -> float | str:
    try:
        return float(calendar.timegm(time.strptime(text, DATE_FORMAT)))
    except ValueError:
        return "invalid"


def _ours(text: str) -> float | str:
    try:
        return parse_tw_date(text)
    except ValueError:
        return "invalid"


def test_dates_read_as_strptime_reads_them() -> None:
    rng = random.Random(4)
    samples = [
        "20250131T120000Z",
        "20240229T235961Z",  # leap day, leap second: strptime takes both
        "20250229T000000Z",  # not a leap year
        "00000101T000000Z",  # year 0
        "00010101T000000Z",
        "20251301T000000Z",
        "20250100T000000Z",
        "20250131T240000Z",
        "20250131t120000z",  # strptime ignores case
        "2025 1 1T120000Z",
        "\uff12\uff10\uff12\uff150131T120000Z",  # fullwidth digits: strptime reads them
        "20250131T120000",
        "",
    ]
    for _ in range(20_000):
        parts = [f"{rng.randint(0, 9999):04d}"] + [f"{rng.randint(0, 63):02d}" for _ in range(5)]
        samples.append("{}{}{}T{}{}{}Z".format(*parts))
    assert [_ours(s) for s in samples] == [_strptime(s) for s in samples]


def test_random_uuids_have_the_uuid4_form() -> None:
    for _ in range(1000):
        text, hexed = unique.uuid4(), unique.uuid4_hex()
        assert str(uuid.UUID(text)) == text and uuid.UUID(text).version == 4
        parsed = uuid.UUID(hex=hexed)
        assert parsed.hex == hexed and parsed.version == 4 and parsed.variant == uuid.RFC_4122
    assert len({unique.uuid4() for _ in range(1000)}) == 1000
    assert len(unique.token_hex(16)) == 32 and unique.token_hex(16) != unique.token_hex(16)


def test_hostname_is_the_sockets() -> None:
    assert hostname() == socket.gethostname()


def test_atomic_write_leaves_one_private_temporary_name_behind_nothing(tmp_path: Path) -> None:
    target = tmp_path / "file.json"
    write_atomic(target, b"one", mode=0o640)
    write_atomic(target, b"two", mode=0o640)
    assert target.read_bytes() == b"two" and (os.stat(target).st_mode & 0o777) == 0o640
    assert os.listdir(tmp_path) == ["file.json"]


def test_a_cache_is_written_whole_into_a_free_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Not renamed over the old file (ext4 would start writing the new one out at once, ADR 0016): the old
    # one is gone when the new one is renamed into place; the result is as `write_atomic`'s.
    target = tmp_path / "cache.bin"
    seen: list[bool] = []
    rename = os.replace

    def spy(src: str, dst: Path) -> None:
        seen.append(os.path.lexists(dst))
        rename(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    write_cache(target, b"one", mode=0o640)
    write_cache(target, b"two", mode=0o640)
    assert seen == [False, False]
    assert target.read_bytes() == b"two" and (os.stat(target).st_mode & 0o777) == 0o640
    assert os.listdir(tmp_path) == ["cache.bin"]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "# only a comment\n",
        "[michi]\n# lock_ttl = 300\n\n",
        "[michi]\r\n# windows line ends\r\n",
        "  # indented comment\n[michi]\n",
        "[michi]\n[michi]\n",  # a table twice: tomllib refuses it
        "[michi]\n\tclaim_ttl = 5\n",
        "# tab\tin a comment\n",
        "# bare \r carriage return\n",
        "claim_ttl = 5\n",
        "[other]\n",
        "# comment\x7f\n",
    ],
)
def test_a_config_without_settings_reads_as_tomllib_reads_it(tmp_path: Path, text: str) -> None:
    path = tmp_path / ".michi.toml"
    path.write_bytes(text.encode())
    try:
        data = tomllib.loads(text)
        expected: object = config.load(None, {}, **data.get("michi", data))
    except tomllib.TOMLDecodeError:
        expected = config.ConfigError
    except config.ConfigError:
        expected = config.ConfigError
    try:
        got: object = config.load(path, {})
    except config.ConfigError:
        got = config.ConfigError
    assert got == expected
