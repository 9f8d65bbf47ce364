"""Rendering, in one place: a result becomes JSON on stdout (agents) or rich text (people)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import sys
from collections.abc import Callable
from functools import singledispatch
from typing import Any

from michi import shown
from michi.errors import MichiError
from michi.results import Result


def _reset_look() -> None:
    """Back to the default look after an output that shows none (JSON, errors). The look module (and
    the dataclasses behind it) loads only when a command set a look or a person is shown something."""
    look = sys.modules.get("michi.cli.views.look")
    if look is not None:
        look.take()


# Text for people comes from anyone: commit trailers another clone wrote, a refusing remote's hook output,
# task fields. No control character but a line break or a tab reaches the terminal (`michi.shown`).
_UNSAFE = re.compile(shown.LINES_KEPT_CLASS)


def for_terminal(text: str) -> str:
    """`text` with every control character but line breaks and tabs as U+FFFD (`michi.shown`)."""
    return _UNSAFE.sub(shown.REPLACED, text) if _UNSAFE.search(text) else text


def note(text: str) -> None:
    """One `michi: ...` line on stderr, for people (stdout stays one JSON document)."""
    _to_stderr(for_terminal(f"michi: {text}") + "\n")


def _to_stderr(text: str) -> None:
    """Write `text` on stderr; a stderr that cannot take it (closed, a full disk) drops it, and later
    writes go nowhere: what is said there never changes the command's result or exit code (a read whose
    note could not be written was reported as `storage_failed`, exit 5)."""
    try:
        sys.stderr.write(text)
        sys.stderr.flush()
    except (OSError, ValueError):
        _to_nowhere(sys.stderr)


def _to_nowhere(stream: Any) -> None:
    """Point `stream`'s file at `/dev/null`: later writes and the interpreter's last flush then go nowhere
    instead of failing again."""
    with contextlib.suppress(OSError, ValueError, io.UnsupportedOperation):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, stream.fileno())
        os.close(null)


@singledispatch
def human(result: Result) -> Any:
    """Register richer views with `@human.register(SomeResult)` in the CLI module of that verb."""
    text = result.summary()
    return text if text else json.dumps(result.to_json(), indent=2, ensure_ascii=False)


_deferred_views: list[Callable[[], None]] = []


def defer_views(register: Callable[[], None]) -> None:
    """Register views only if a person's output is rendered: they import result types that --json
    output never needs (ADR 0010)."""
    _deferred_views.append(register)


def _escape_what_is_not_utf8() -> None:
    """A path git gives as bytes that are not UTF-8 (a folder name; Linux allows any) reaches michi's text
    as lone surrogates. A strict stdout (a UTF-8 locale, the served worker) failed on them after a change
    had landed (exit 1: repeated, a second task), and surrogateescape (C.UTF-8) wrote the raw byte into
    --json's output, which no agent can decode. Escaped (`\\udcff`), the output is UTF-8, and valid JSON
    inside a string."""
    with contextlib.suppress(AttributeError, ValueError, io.UnsupportedOperation):
        sys.stdout.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]


def emit(result: Result, json_mode: bool) -> int:
    """Print `result` once: its JSON, or its view for people in the look the command asked for."""
    _escape_what_is_not_utf8()
    if json_mode:
        _reset_look()
        serialised = getattr(result, "json_text", None)  # TaskList holds its JSON already (ADR 0008)
        if serialised is not None:
            body = str(serialised())
        else:
            body = json.dumps(result.to_json(), ensure_ascii=False, separators=(",", ":"))
        _to_stdout(lambda: (sys.stdout.write(body), sys.stdout.write("\n")))  # not one more copy
    else:
        from michi.cli.views import look

        while _deferred_views:
            _deferred_views.pop()()
        view = human(result)  # before `take`: a view may read the look (--wide)
        shown = look.take()
        if view is not None and view != "":
            if isinstance(view, str):
                _to_stdout(lambda: sys.stdout.write(for_terminal(view) + "\n"))
            else:
                _to_stdout(lambda: look.console(shown).print(view))
    _to_stdout(lambda: None)
    return int(result.exit_code)


def _to_stdout(write: Callable[[], object]) -> None:
    """`write` to stdout, flushed. A reader that went away (EPIPE: `| head`) or a full disk once made a
    change that had landed end in a traceback and exit 1, and an agent repeated it: the output is dropped
    with a note on stderr, and the exit code stays the command's."""
    try:
        write()
        sys.stdout.flush()
    except OSError as exc:
        _to_nowhere(sys.stdout)
        note(f"the output could not be written ({exc.strerror or exc}); the exit code is the command's")


def fail(exc: MichiError, json_mode: bool) -> int:
    _reset_look()
    _escape_what_is_not_utf8()
    for line in exc.notes:  # as with results: notes on stderr, so stdout stays one JSON document
        note(line)
    if json_mode:
        _to_stdout(lambda: sys.stdout.write(json.dumps(exc.to_json(), ensure_ascii=False) + "\n"))
    else:
        line = f"michi: {exc.message}"
        if exc.hint:
            line += f"\n  hint: {exc.hint}"
        _to_stderr(for_terminal(line) + "\n")
    return int(exc.exit_code)


def usage_text(text: str) -> None:
    if text:
        _to_stderr(text + "\n")
