"""The pre-commit and pre-push scripts `michi hook install` writes, and how to recognise them again.

The script starts the interpreter michi was installed with, as `python -I -S`: `-S` skips
site-packages' start-up (.pth files: 40-100 ms on some machines, on every commit) and `-I` keeps
PYTHON* variables and the work tree's own modules off sys.path. The folder michi was
imported from is appended to sys.path, after the standard library, so nothing there can shadow it
(ADR 0005). The paths are this machine's, which is why the script is generated and never committed.
"""

from __future__ import annotations

import importlib.util
import json
import shlex
import sys
from pathlib import Path

from michi.hook.prepush import GIT_PID_ENV

MARKER = "# michi-hook:"  # the line that makes a hook michi's: install rewrites it, uninstall removes it
VERSION = 2
CHAINED = "pre-commit.michi-chained"  # where the hook that was there before michi's is kept
PUSH_CHAINED = "pre-push.michi-chained"  # the same for the pre-push hook
# The recorded interpreter runs but cannot import michi (the checkout moved, michi was uninstalled from
# that venv): the script then falls back to `michi` on PATH. Not an exit code michi's hook uses.
GONE = 97
GONE_MESSAGE = (
    "michi: the pre-commit hook cannot find michi (not importable by $py, none on PATH); "
    "fix: run 'michi hook install' again where michi is installed, or delete $0"
)
# The journal as the pre-push script sees it from the work tree's top, where git runs hooks, and the
# start of the record naming michi's own push (`Journal.save`; both pinned to the originals by tests).
PUSH_JOURNAL = ".git/michi/journal.json"
PUSH_NAMED = '"push":{"pid":'


def _root_of(module: str) -> str | None:
    """The sys.path entry `module` is imported from (the folder above its package)."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return None
    return str(Path(spec.origin).resolve().parent.parent)


def import_roots() -> list[str]:
    roots: list[str] = []
    for module in ("michi",):  # the hook's path needs nothing outside the standard library
        root = _root_of(module)
        if root is not None and root not in roots:
            roots.append(root)
    return roots


def _code(module: str, roots: list[str]) -> str:
    # JSON: a valid Python list literal whose double quotes sit well inside the shell's single quotes.
    return (
        f"import sys\nsys.path+={json.dumps(roots)}\n"
        f"try:\n from {module} import main\nexcept ImportError:\n sys.exit({GONE})\n"
        "sys.exit(main(sys.argv[1:]))"
    )


def _check(code: str, command: str, gone: str, feed: str = "", indent: str = "") -> str:
    """The shell lines of either hook that run michi's check: the recorded interpreter, else `michi hook
    <command>` on PATH when that interpreter cannot import michi (`GONE`), else a one-line failure; a
    refusal ends the hook with its code. `feed` goes before each (the pre-push hook's ref lines)."""
    lines = f"""rc={GONE}
if [ -x "$py" ]; then
  {feed}"$py" -I -S -c CODE "$@"
  rc=$?
fi
if [ "$rc" = {GONE} ]; then
  if command -v michi >/dev/null 2>&1; then
    {feed}michi hook {command} "$@" || exit $?
  else
    echo "{gone}" >&2
    exit 1
  fi
elif [ "$rc" != 0 ]; then
  exit "$rc"
fi"""
    indented = "\n".join(indent + line for line in lines.split("\n"))
    return indented.replace("CODE", shlex.quote(code), 1)  # after the indent: the code's lines keep theirs


def render(python: str | None = None, roots: list[str] | None = None) -> str:
    python = python or sys.executable
    code = _code("michi.hook.run", import_roots() if roots is None else roots)
    return f"""#!/bin/sh
{MARKER} {VERSION} (written by `michi hook install`; `michi hook uninstall` removes it and puts back
# the hook it chained). Do not edit: run `michi hook install` again instead.
py={shlex.quote(python)}
{_check(code, "run", GONE_MESSAGE)}
case $0 in */*) here=${{0%/*}} ;; *) here=. ;; esac
if [ -x "$here/{CHAINED}" ]; then
  exec "$here/{CHAINED}" "$@"
fi
"""


def render_push(python: str | None = None, roots: list[str] | None = None) -> str:
    """The pre-push script. git's ref lines (stdin) are read once (by the shell itself: no process), for
    michi's check and the chained hook.
    No journal (a plain `.git` folder without one), or a push the journal names (michi's own, ADR 0004):
    nothing to check, and no Python started. Anything else, a linked work tree's `.git` file included,
    goes to `michi.hook.prepush`."""
    python = python or sys.executable
    code = _code("michi.hook.prepush", import_roots() if roots is None else roots)
    gone = GONE_MESSAGE.replace("pre-commit", "pre-push")
    feed = f"printf '%s' \"$refs\" | {GIT_PID_ENV}=$PPID "  # git's ref lines, and git's pid
    return f"""#!/bin/sh
{MARKER} {VERSION} (written by `michi hook install`; `michi hook uninstall` removes it and puts back
# the hook it chained). Do not edit: run `michi hook install` again instead.
py={shlex.quote(python)}
refs=
while IFS= read -r line || [ -n "$line" ]; do
  refs="$refs$line
"
done
j={PUSH_JOURNAL}
if [ -d .git ] && [ ! -e "$j" ]; then
  :
elif [ -f "$j" ] && grep -qF {shlex.quote(PUSH_NAMED)}"$PPID," "$j"; then
  :
else
{_check(code, "push-check", gone, feed=feed, indent="  ")}
fi
case $0 in */*) here=${{0%/*}} ;; *) here=. ;; esac
if [ -x "$here/{PUSH_CHAINED}" ]; then
  printf '%s' "$refs" | "$here/{PUSH_CHAINED}" "$@"
  exit $?
fi
"""


def is_michis(path: Path) -> bool:
    """A regular file (not a symlink) carrying our marker line near its top."""
    if path.is_symlink() or not path.is_file():
        return False
    try:
        with path.open("rb") as fh:
            head = fh.read(512)
    except OSError:
        return False
    return MARKER.encode() in head
