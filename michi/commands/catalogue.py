"""Every error code michi can print, with its exit code, found in michi's own code so the guide cannot drift.

Two sources: the `code` of every `MichiError` subclass, and the `code="..."` given where an error is raised
(e.g. `GitFailed(..., code="push_unknown")`), found by parsing michi's source with `ast`; such a code's
exit code is that of the class it is raised with.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

from michi.errors import ExitCode, MichiError

ROOT = Path(__file__).resolve().parent.parent

EXIT_MEANINGS = {
    ExitCode.OK: "ok",
    ExitCode.UNEXPECTED: "unexpected error (a bug: please report it)",
    ExitCode.USAGE: "usage: bad flags or arguments, bad configuration, not a repository",
    ExitCode.NOT_FOUND: "not found (unknown task; no_ready_task from next)",
    ExitCode.CONFLICT: "conflict: changed since --if-version, claimed by another agent, invalid state change",
    ExitCode.GIT: "git or remote failure (unreachable, rejected, repository mid-rebase)",
    ExitCode.LOCK_BUSY: "lock busy: the repo lock stayed held for longer than --wait",
    ExitCode.INTERRUPTED: "interrupted (Ctrl-C); nothing half-done is left",
}
assert set(EXIT_MEANINGS) == set(ExitCode)


def _sources() -> list[tuple[str, ast.Module]]:
    """Every module of michi: its name and its syntax tree."""
    out = []
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out.append((name, ast.parse(path.read_text(encoding="utf-8"))))
    return out


def _declares_code(tree: ast.Module) -> bool:
    """Whether a module declares a class with a `code = "..."` (a MichiError subclass, usually)."""
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                targets = item.targets if isinstance(item, ast.Assign) else []
                if any(isinstance(t, ast.Name) and t.id == "code" for t in targets):
                    return True
    return False


def _classes(sources: list[tuple[str, ast.Module]]) -> dict[str, type[MichiError]]:
    for name, tree in sources:  # imported, so `__subclasses__` sees every error class
        if _declares_code(tree) and not name.startswith("michi.mcp"):  # mcp: an optional extra
            importlib.import_module(name)
    found: dict[str, type[MichiError]] = {"MichiError": MichiError}
    todo = [MichiError]
    while todo:
        for sub in todo.pop().__subclasses__():
            found[sub.__name__] = sub
            todo.append(sub)
    return found


def _raised_codes(
    classes: dict[str, type[MichiError]], sources: list[tuple[str, ast.Module]]
) -> dict[str, int]:
    """Codes given as `code=` to an error raised anywhere in michi, with that error class's exit code."""
    out: dict[str, int] = {}
    for _, tree in sources:
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            for kw in node.keywords:
                if (
                    kw.arg == "code"
                    and isinstance(kw.value, ast.Constant)
                    and isinstance(kw.value.value, str)
                ):
                    cls = classes.get(name, MichiError)
                    out.setdefault(kw.value.value, int(cls.exit_code))
    return out


def all_error_codes() -> dict[str, list[int]]:
    """code -> every exit code it comes with, its own first (see `error_codes`)."""
    sources = _sources()
    classes = _classes(sources)
    codes: dict[str, list[int]] = {}
    # A class marked `also` gives its code under another exit code too (`HoldLost`: `lock_lost` is 4
    # from `lock release`/`renew`, 75 from every command that lost the lock midway): listed after the
    # code's own. Without the mark the last class seen won, and the guide said `lock_lost` was exit 4.
    for cls in sorted(classes.values(), key=lambda c: bool(c.__dict__.get("also"))):
        exits = codes.setdefault(cls.code, [])
        if int(cls.exit_code) not in exits:
            exits.append(int(cls.exit_code))
    for code, exit_code in _raised_codes(classes, sources).items():
        codes.setdefault(code, [exit_code])
    return dict(sorted(codes.items(), key=lambda kv: (kv[1][0], kv[0])))


def error_codes() -> dict[str, int]:
    """code -> exit code, sorted by exit code then name."""
    return {code: exits[0] for code, exits in all_error_codes().items()}
