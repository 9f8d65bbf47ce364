"""Configuration: `.michi.toml` at the repository root, overridden by `MICHI_*`, overridden by flags.

Every key is declared once in `KEYS`, with its type, its environment variable and what is allowed, so a
bad value anywhere is one usage error naming where it came from, the key and what is allowed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from michi.errors import ConfigError
from michi.plain import Plain


class Config(Plain):
    __slots__ = (
        "allow_hand_edits",
        "branch",
        "claim_ttl",
        "group_commit",
        "lock_ttl",
        "lock_wait",
        "push_retries",
        "read_max_age",
        "remote",
        "remote_timeout",
    )

    def __init__(
        self,
        lock_ttl: float = 300.0,  # seconds a lock lease lasts without renewal: 5 minutes (ADR 0003)
        lock_wait: float = 30.0,  # seconds a locking command waits for the lock; 0 = one try
        remote: str = "origin",  # the remote that is the source of truth
        branch: str = "",  # the task branch; empty = the remote's default branch
        claim_ttl: float = 3600.0,  # seconds an agent's claim lasts; 0 = no expiry
        push_retries: int = 1,  # refused pushes before this clone takes its turn (ADR 0004, 0015)
        allow_hand_edits: bool = False,  # let the pre-commit hook pass hand edits of .tasks/ files
        read_max_age: float = 60.0,  # seconds after the last sync `list` and `show` fetch before answering
        group_commit: bool = True,  # waiters of one clone hand their operation to the holder (ADR 0017)
        remote_timeout: float = 120.0,  # seconds a fetch or push may take before it is ended; 0 = no limit
    ) -> None:
        self.lock_ttl, self.lock_wait, self.remote, self.branch = lock_ttl, lock_wait, remote, branch
        self.claim_ttl, self.push_retries = claim_ttl, push_retries
        self.allow_hand_edits, self.read_max_age = allow_hand_edits, read_max_age
        self.group_commit, self.remote_timeout = group_commit, remote_timeout

    def replace(self, **changes: Any) -> Config:
        """A copy with `changes` (as `dataclasses.replace`)."""
        return Config(**{**{name: getattr(self, name) for name in self._fields}, **changes})


# A lease or a claim is written as its expiry date (YYYYMMDDTHHMMSSZ, year 9999 at most): a TTL past any
# date once made a task file michi itself could not read back. Ten years is more than any lease needs, and
# no wait or timeout needs more either (a later deadline overflows the clock's sums).
MAX_TTL = 10 * 366 * 86400


def _seconds(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError
    number = float(value)
    if number < 0 or number != number or number > MAX_TTL:
        raise ValueError
    return number


def _lease(value: Any) -> float:
    """A lock lease must end: with none, a holder that hangs (alive, stopped, or on a PID reused after a
    reboot it cannot tell) holds the clone's lock for ever, and nothing but `--force` frees it."""
    number = _seconds(value)
    if number <= 0:
        raise ValueError
    return number


def _count(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError
    number = int(value)
    if number < 1 or number > 100:
        raise ValueError
    return number


def _name(value: Any) -> str:
    if not isinstance(value, str) or any(c.isspace() for c in value) or value.startswith("-"):
        raise ValueError
    return value


_REF_CHARS = frozenset("~^:?*[\\")


def _branch(value: Any) -> str:
    """A branch name git accepts (`git check-ref-format --branch`: no `..`, `@{`, `~^:?*[\\`, control
    characters, component starting with `.` or ending with `.lock`, empty component, final `/` or `.`),
    and not one that reads as something else (`HEAD`, `@`, a full `refs/...` name): the task branch is
    pushed as `refs/heads/<branch>` to everyone's remote. Empty: the remote's default branch."""
    name = _name(value)
    if name == "":
        return name
    parts = name.split("/")
    if (
        name in ("HEAD", "@")
        or name.startswith("refs/")
        or ".." in name
        or "@{" in name
        or name.endswith((".", "/"))
        or any(c in _REF_CHARS or ord(c) < 32 or ord(c) == 127 for c in name)
        or any(p == "" or p.startswith(".") or p.endswith(".lock") for p in parts)
    ):
        raise ValueError
    return name


def _flag(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in {"1", "true", "yes", "on"}:
        return True
    if text in {"0", "false", "no", "off"}:
        return False
    raise ValueError


class Key(Plain):
    __slots__ = ("allowed", "env", "parse")

    def __init__(self, parse: Callable[[Any], Any], env: str, allowed: str) -> None:
        self.parse, self.env, self.allowed = parse, env, allowed


KEYS: dict[str, Key] = {
    "lock_ttl": Key(
        _lease, "MICHI_LOCK_TTL", f"a number of seconds above 0, at most {MAX_TTL} (ten years): a lease ends"
    ),
    "lock_wait": Key(_seconds, "MICHI_LOCK_WAIT", "a number of seconds from 0 to ten years"),
    "remote": Key(_name, "MICHI_REMOTE", "a remote name without spaces"),
    "branch": Key(_branch, "MICHI_BRANCH", "a branch name git accepts (empty = remote default)"),
    "claim_ttl": Key(_seconds, "MICHI_CLAIM_TTL", f"a number of seconds from 0 to {MAX_TTL} (0 = no expiry)"),
    "push_retries": Key(_count, "MICHI_PUSH_RETRIES", "a whole number from 1 to 100"),
    "allow_hand_edits": Key(_flag, "MICHI_ALLOW_HAND_EDITS", "true or false"),
    "read_max_age": Key(
        _seconds, "MICHI_READ_MAX_AGE", "a number of seconds from 0 to ten years (0 = always fetch)"
    ),
    "group_commit": Key(_flag, "MICHI_GROUP_COMMIT", "true or false"),
    "remote_timeout": Key(
        _seconds, "MICHI_REMOTE_TIMEOUT", "a number of seconds from 0 to ten years (0 = no limit)"
    ),
}
assert set(KEYS) == set(Config._fields)


def _apply(config: Config, values: Mapping[str, Any], where: Callable[[str], str]) -> Config:
    changes: dict[str, Any] = {}
    for name, raw in values.items():
        key = KEYS.get(name)
        if key is None:
            raise ConfigError(
                f"{where(name)}: unknown key {name!r}", hint=f"known keys: {', '.join(sorted(KEYS))}"
            )
        try:
            changes[name] = key.parse(raw)
        except (ValueError, TypeError, OverflowError):  # int(inf) overflows
            raise ConfigError(
                f"{where(name)}: {name} = {raw!r} is not allowed", hint=f"{name} must be {key.allowed}"
            ) from None
    return config.replace(**changes)


def _no_settings(text: str) -> bool:
    """True for a file of blank lines, comments and at most one `[michi]` header, as `michi init` writes
    it: what tomllib would read as no settings, known without running its parser (~5 ms of regexes)."""
    headers = 0
    for raw in text.split("\n"):
        line = raw.removesuffix("\r")
        if not line.isprintable():  # tabs, control characters: let tomllib judge
            return False
        line = line.strip(" ")
        if line == "[michi]":
            headers += 1
        elif line and not line.startswith("#"):
            return False
    return headers <= 1


MAX_CONFIG_BYTES = 1 << 20


def _check_link(config_file: Path) -> None:
    """A settings file that is a link is read only when it names a file of the work tree: one pushed by
    another clone pointing out of it gave every clone settings from outside the repository."""
    top = Path(os.path.realpath(config_file.parent))
    found = Path(os.path.realpath(config_file))
    if not found.is_relative_to(top) or ".git" in found.relative_to(top).parts:
        raise ConfigError(
            f"{config_file.name} is a link out of the repository; michi reads its settings only from the "
            "repository's own files",
            hint=f"replace {config_file.name} by a file (`git rm` the link, commit, push)",
        )


def _read(config_file: Path) -> dict[str, Any]:
    if config_file.is_symlink():
        _check_link(config_file)
    try:
        with open(config_file, "rb") as source:  # a committed file of megabytes is never read whole
            raw = source.read(MAX_CONFIG_BYTES + 1)
        if len(raw) > MAX_CONFIG_BYTES:
            raise ConfigError(
                f"{config_file.name}: larger than the {MAX_CONFIG_BYTES:,} bytes a settings file may hold",
                hint="fix the file",
            )
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{config_file.name}: not valid TOML ({exc})", hint="fix the file") from None
    if _no_settings(text):
        return {}
    import tomllib  # only for a file that sets something (ADR 0010)

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{config_file.name}: not valid TOML ({exc})", hint="fix the file") from None
    except RecursionError:  # a committed file nested 100,000 deep must not stop every command
        raise ConfigError(f"{config_file.name}: nested too deep", hint="fix the file") from None


def load(config_file: Path | None, environ: Mapping[str, str] | None = None, **flags: Any) -> Config:
    """File, then environment, then flags (a flag left as None does not override)."""
    config = Config()
    if config_file is not None and config_file.is_file():
        data = _read(config_file)
        section = data.get("michi", data)
        if not isinstance(section, dict) or ("michi" in data and len(data) > 1):
            outside = sorted(k for k in data if k != "michi") if isinstance(section, dict) else []
            raise ConfigError(
                f"{config_file.name}: "
                + (
                    f"keys outside [michi]: {', '.join(outside)}"
                    if outside
                    else "michi must be one [michi] table"
                ),
                hint="put michi's settings under one [michi] table, e.g. `[michi]` then `lock_ttl = 300`",
            )
        config = _apply(config, section, lambda _n: str(config_file.name))
    env = os.environ if environ is None else environ
    from_env = {name: env[key.env] for name, key in KEYS.items() if env.get(key.env, "") != ""}
    config = _apply(config, from_env, lambda n: f"environment {KEYS[n].env}")
    given = {name: value for name, value in flags.items() if value is not None}
    return _apply(config, given, lambda n: f"option --{FLAGS.get(n, n.replace('_', '-'))}")


FLAGS = {"lock_ttl": "ttl", "lock_wait": "wait"}  # the command-line spelling of the keys flags override
