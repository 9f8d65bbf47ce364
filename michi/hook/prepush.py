"""`michi hook push-check`: what git runs before every push, installed with the pre-commit hook (ADR 0005).

A commit michi made offline holds provisional ids (ADR 0007). Pushed by git (`git pull --rebase && git
push`) it reaches the remote as it is, and its task may share its id with one another clone added
meanwhile. The hook refuses a push that carries such a commit: `michi sync` lands the same operations
with ids taken on the remote. `--no-verify` skips it; michi then renumbers the task after the fact
(`michi.workflow.recovery.renumberings`): the hook spares that detour, it does not keep ids unique.

The hook's script answers the usual pushes without Python: no journal, or a push the journal names
(michi's own, whose process it records before it starts, ADR 0004). Here: `os` and `sys` only, until the
journal names offline work.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Mapping

USAGE = """usage: michi hook push-check [REMOTE [URL]]

Git's pre-push hook (installed by `michi hook install`), git's ref lines on stdin. Refuses a push that
carries commits michi made offline and has not synced (their task ids are provisional): run `michi sync`
first. Lets michi's own pushes through.
"""
# Mirrors of michi's own facts, pinned to the originals by tests (importing them costs the hook's budget):
JOURNAL = os.path.join("michi", "journal.json")  # in the common git dir (RepoPaths.state_dir, Journal.path)
OFFLINE = "offline"  # an offline entry's state (michi.workflow.journal.OFFLINE)
GIT_PID_ENV = "MICHI_HOOK_GIT_PID"  # the `git push` the hook runs under: the script passes its $PPID
MAX_STATE_BYTES = 256 << 20  # a state file larger is never read (michi.atomic.MAX_STATE_BYTES)
_HEX = frozenset("0123456789abcdef")


def _read_regular(path: str) -> bytes | None:
    """The file's bytes; None when it is missing, no regular file (never a symlink followed, nor a FIFO
    waited on) or larger than any journal michi writes: the journal's own rules (ADR 0004)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_STATE_BYTES:
            return None
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def pending(common_dir: str, environ: Mapping[str, str]) -> list[str]:
    """The txns of the offline entries in the journal; none for the push the journal names (michi's own),
    and none when there is no journal michi wrote (a damaged one is michi's to report, not the hook's)."""
    raw = _read_regular(os.path.join(common_dir, JOURNAL))
    if raw is None:
        return []
    import json

    try:
        data = json.loads(raw)
    except ValueError:
        return []
    if not isinstance(data, dict) or not isinstance(data.get("entries"), list):
        return []
    push = data.get("push")
    if isinstance(push, dict) and str(push.get("pid")) == environ.get(GIT_PID_ENV):
        return []
    txns = [e.get("txn") for e in data["entries"] if isinstance(e, dict) and e.get("state") == OFFLINE]
    return [t for t in txns if isinstance(t, str) and 0 < len(t) <= 64 and _HEX.issuperset(t)]


def carried(txns: list[str], lines: list[str], remote: str | None, cwd: str | None = None) -> list[str]:
    """Those of `txns` that a commit of this push carries: reachable from a pushed tip, not from what the
    remote has (its tip named on the ref line, the remote-tracking branches of `remote`). One `git log`
    that filters in C; a push git cannot answer for is let through (michi repairs after the fact)."""
    tips, known = [], []
    for line in lines:
        fields = line.split()
        if len(fields) != 4 or not set(fields[1]) - {"0"}:
            continue  # not a ref line, or a deletion, which carries nothing
        tips.append(fields[1])
        if set(fields[3]) - {"0"}:
            known.append(fields[3])
    if not tips or not txns:
        return []
    import subprocess

    pattern = f"^Michi-Txn: *({'|'.join(txns)}) *$"
    args = ["git", "log", "-z", "--format=%B", "-E", f"--grep={pattern}", "--ignore-missing", *tips, "--not"]
    args += known + ([f"--remotes={remote}"] if remote else [])
    env = {k: v for k, v in os.environ.items() if k != "MICHI_LOCK_TOKEN"}  # never handed to git
    proc = subprocess.run(args, cwd=cwd, capture_output=True, env=env, check=False)
    if proc.returncode != 0:
        return []
    wanted, found = set(txns), []
    for line in proc.stdout.decode("utf-8", "replace").splitlines():
        key, _, value = line.partition(":")
        if key == "Michi-Txn" and value.strip() in wanted and value.strip() not in found:
            found.append(value.strip())
    return found


def main(argv: list[str]) -> int:
    if "-h" in argv or "--help" in argv:
        sys.stdout.write(USAGE)
        return 0
    from michi.hook import probe

    common = probe.common_dir(os.getcwd())
    txns = pending(common, os.environ) if common is not None else []
    if not txns:
        return 0
    found = carried(txns, sys.stdin.read().splitlines(), argv[0] if argv else None)
    if not found:
        return 0
    from michi.hook import messages

    refusal = messages.unsynced_push(len(found))
    sys.stderr.write(f"michi: {refusal.message}\n")
    return int(refusal.exit_code)
