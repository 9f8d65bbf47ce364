"""Refs, config and in-progress operations read from the files, without running git (ADR 0008).

These start no git process and import no GitPython: `michi task list` answers from its cache when the
ref it read last time still holds the same commit, and finding that out must cost file reads only.
"""

from __future__ import annotations

import os
from pathlib import Path

from michi.git import environ


def refs_are_files(common_dir: Path) -> bool:
    """False for the reftable backend (git 2.45+), whose refs `read_ref` cannot read."""
    return not (common_dir / "reftable").exists()


def _packed_refs(common_dir: Path) -> dict[str, str]:
    try:
        text = (common_dir / "packed-refs").read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    refs: dict[str, str] = {}
    for line in text.splitlines():
        if line and line[0] not in "#^":  # header, and the peeled oid of the annotated tag above
            oid, _, name = line.partition(" ")
            refs[name] = oid
    return refs


def _is_oid(text: str) -> bool:
    return len(text) in (40, 64) and all(c in "0123456789abcdef" for c in text)


def read_ref(common_dir: Path, refname: str) -> str | None:
    """The oid `refname` (e.g. `refs/heads/main`) points at, as git reads it: the loose ref file (following
    `ref: ` symbolic refs), else `packed-refs`. None when it does not exist; ValueError when the file is
    not a ref git could read (let git itself decide then)."""
    for _hop in range(5):  # git follows at most 5 levels of symbolic refs
        text = read_ref_file(common_dir, refname)
        if text is None:
            oid = _packed_refs(common_dir).get(refname)
            if oid is not None and not _is_oid(oid):
                raise ValueError(f"packed-refs: bad oid for {refname}")
            return oid
        if text.startswith("ref:"):
            refname = text[4:].strip()
            continue
        if not _is_oid(text):
            raise ValueError(f"{refname}: not a ref")
        return text
    raise ValueError(f"{refname}: symbolic refs nest too deep")


def read_ref_file(folder: Path, refname: str) -> str | None:
    """A loose ref file's raw content (`<oid>` or `ref: <target>`), or None when there is none."""
    try:
        return (folder / refname).read_text(encoding="utf-8").strip()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None


_systems: dict[str, list[str]] = {}  # PATH -> `_system_files` (a served worker has its caller's PATH)


def _system_files(path: str) -> list[str]:
    """Where the `git` on `path` (PATH) may keep its system config: git builds it in as
    `$(prefix)/etc/gitconfig`, `/etc/gitconfig` for a prefix of `/usr` (distributions). Both the prefix of
    the PATH entry and that of the resolved binary count (Homebrew links `/opt/homebrew/bin/git` into its
    Cellar): a file that is not there only costs a failed read, a file left out would make a kept answer
    outlive its change."""
    found = _systems.get(path)
    if found is not None:
        return found
    found = ["/etc/gitconfig"]
    for folder in path.split(os.pathsep):
        binary = os.path.join(folder or ".", "git")
        if os.access(binary, os.X_OK) and not os.path.isdir(binary):
            resolved = os.path.dirname(os.path.dirname(os.path.realpath(binary)))
            for prefix in (os.path.dirname(os.path.abspath(folder or ".")), resolved):
                candidate = os.path.join(prefix, "etc", "gitconfig")
                if prefix != "/usr" and candidate not in found:
                    found.append(candidate)
            break
    _systems[path] = found
    return found


def _config_files(git_dir: Path, common_dir: Path) -> list[str]:
    """The files `git config --get` reads here (system, global, repository, work tree), in that order.
    Strings, not Paths: this runs on every command's path (ADR 0016)."""
    env = environ.current()
    files: list[str] = []
    if env.get("GIT_CONFIG_NOSYSTEM", "").lower() not in ("1", "true", "yes", "on"):
        system = env.get("GIT_CONFIG_SYSTEM")
        files += [system] if system else _system_files(env.get("PATH", ""))
    if "GIT_CONFIG_GLOBAL" in env:
        if env["GIT_CONFIG_GLOBAL"]:  # set and empty: no file at all for git (not the current folder)
            files.append(os.fspath(Path(env["GIT_CONFIG_GLOBAL"])))
    else:
        home = os.path.expanduser(env.get("HOME") or "~")
        xdg = env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
        files += [os.path.join(xdg, "git", "config"), os.path.join(home, ".gitconfig")]
    return [*files, os.path.join(common_dir, "config"), os.path.join(git_dir, "config.worktree")]


def config_fingerprint(git_dir: Path, common_dir: Path) -> tuple[str, ...] | None:
    """Everything `git config` answers from here, as one comparable value: the text of each config file
    and the GIT_CONFIG* environment. None when an `[include]` or `[includeIf]` pulls in files this cannot
    see (in a config file or the environment), or GIT_CONFIG names the file: then only git itself can say
    what the configuration is."""
    env = environ.current()
    parts = [f"{k}={v}" for k, v in sorted(env.items()) if k.startswith("GIT_CONFIG")]
    # `git -c include.path=F` and GIT_CONFIG_KEY_n=include.path name a file from the environment, and
    # GIT_CONFIG=F is the one file `git config` reads: their text is not here, so git must say.
    settings = [v for k, v in env.items() if k == "GIT_CONFIG_PARAMETERS" or k.startswith("GIT_CONFIG_KEY_")]
    if "GIT_CONFIG" in env or any("include" in value.lower() for value in settings):
        return None
    for path in _config_files(git_dir, common_dir):
        try:
            with open(path, "rb") as file:  # bytes as they are (no newline translation): git's view
                text = file.read().decode("utf-8", "surrogateescape")
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            text = "\0missing"
        except OSError:  # a folder, a read error: what git makes of it, git says
            return None
        if "include" in text.lower():
            return None
        parts += [path, text]
    return tuple(parts)


def operation_in_progress(git_dir: Path) -> str | None:
    """A rebase, merge, cherry-pick or revert the user has started and not finished, if any."""
    for name, what in (
        ("rebase-merge", "a rebase"),
        ("rebase-apply", "a rebase or am"),
        ("MERGE_HEAD", "a merge"),
        ("CHERRY_PICK_HEAD", "a cherry-pick"),
        ("REVERT_HEAD", "a revert"),
    ):
        if (git_dir / name).exists():
            return what
    return None
