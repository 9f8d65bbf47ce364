"""All of michi's git access, as small named functions: one git action each, the repo passed in.

One package, the only place that runs git (ADR 0002), in modules by job: `repo` (a repository: git
processes, the persistent `cat-file`, loose objects written in Python; ADR 0010), `plain` (plain
subprocesses for the hook's hot path, ADR 0005), `files` (refs and config read from the files, ADR 0008),
`core` (refs, the user's index), `remote` (fetch and push) and `objects` (blobs, trees, commits).
michi does not use GitPython: importing it cost more CPU than a whole transaction (ADR 0010).
`history` reads one file's history (`task log`); `trail` reads michi's commits and their trailers back,
and how far two refs diverge (ADR 0013).
The names load their module on first use (PEP 562): the read path's cache check needs `files` only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from michi.lazy import attributes

if TYPE_CHECKING:
    from michi.git.checkout import Moves as Moves
    from michi.git.checkout import PathEntry as PathEntry
    from michi.git.checkout import check_ahead as check_ahead
    from michi.git.core import NO_PROMPT as NO_PROMPT
    from michi.git.core import Head as Head
    from michi.git.core import commit_messages as commit_messages
    from michi.git.core import fetch_refspecs as fetch_refspecs
    from michi.git.core import fork_point as fork_point
    from michi.git.core import head as head
    from michi.git.core import index_holds as index_holds
    from michi.git.core import is_ancestor as is_ancestor
    from michi.git.core import merge_base as merge_base
    from michi.git.core import messages_matching as messages_matching
    from michi.git.core import open_repo as open_repo
    from michi.git.core import prepare_update_ref as prepare_update_ref
    from michi.git.core import read_tree_update as read_tree_update
    from michi.git.core import ref_oid as ref_oid
    from michi.git.core import remote_default_branch as remote_default_branch
    from michi.git.core import remote_exists as remote_exists
    from michi.git.core import remote_names as remote_names
    from michi.git.core import rev_list as rev_list
    from michi.git.core import update_ref as update_ref
    from michi.git.deltas import remember_delta as remember_delta
    from michi.git.files import config_fingerprint as config_fingerprint
    from michi.git.files import operation_in_progress as operation_in_progress
    from michi.git.files import read_ref as read_ref
    from michi.git.files import read_ref_file as read_ref_file
    from michi.git.files import refs_are_files as refs_are_files
    from michi.git.history import PathRevision as PathRevision
    from michi.git.history import path_history as path_history
    from michi.git.objects import BLOB_MODE as BLOB_MODE
    from michi.git.objects import EMPTY_TREE as EMPTY_TREE
    from michi.git.objects import TREE_MODE as TREE_MODE
    from michi.git.objects import CommitMeta as CommitMeta
    from michi.git.objects import diff_moves as diff_moves
    from michi.git.objects import diff_task_files as diff_task_files
    from michi.git.objects import diff_trees as diff_trees
    from michi.git.objects import edit_tree as edit_tree
    from michi.git.objects import iter_blobs as iter_blobs
    from michi.git.objects import ls_task_files as ls_task_files
    from michi.git.objects import path_kind as path_kind
    from michi.git.objects import read_blob as read_blob
    from michi.git.objects import read_commit as read_commit
    from michi.git.objects import read_path as read_path
    from michi.git.objects import remember_edit as remember_edit
    from michi.git.objects import signature as signature
    from michi.git.objects import tree_of as tree_of
    from michi.git.objects import warm_up as warm_up
    from michi.git.objects import write_blob as write_blob
    from michi.git.objects import write_blobs as write_blobs
    from michi.git.objects import write_commit as write_commit
    from michi.git.plain import TASK_PATHSPECS as TASK_PATHSPECS
    from michi.git.plain import config_get as config_get
    from michi.git.plain import hooks_dir as hooks_dir
    from michi.git.plain import quick as quick
    from michi.git.plain import run as run
    from michi.git.plain import staged_paths as staged_paths
    from michi.git.plain import staged_task_paths as staged_task_paths
    from michi.git.prepared import drop_prepared as drop_prepared
    from michi.git.prepared import tidy as tidy
    from michi.git.remote import PushResult as PushResult
    from michi.git.remote import fetch_branch as fetch_branch
    from michi.git.remote import prefetch_branch as prefetch_branch
    from michi.git.remote import push as push
    from michi.git.remote import pushes_here as pushes_here
    from michi.git.repo import Repo as Repo
    from michi.git.trail import LogEntry as LogEntry
    from michi.git.trail import ahead_behind as ahead_behind
    from michi.git.trail import commit_times as commit_times
    from michi.git.trail import log_entries as log_entries

_HOMES = {
    "Moves": "checkout",
    "check_ahead": "checkout",
    "PathEntry": "checkout",
    "NO_PROMPT": "core",
    "Head": "core",
    "head": "core",
    "is_ancestor": "core",
    "merge_base": "core",
    "fork_point": "core",
    "open_repo": "core",
    "read_tree_update": "core",
    "ref_oid": "core",
    "remote_default_branch": "core",
    "remote_exists": "core",
    "fetch_refspecs": "core",
    "remote_names": "core",
    "rev_list": "core",
    "update_ref": "core",
    "index_holds": "core",
    "prepare_update_ref": "core",
    "drop_prepared": "prepared",
    "tidy": "prepared",
    "config_fingerprint": "files",
    "operation_in_progress": "files",
    "read_ref": "files",
    "read_ref_file": "files",
    "refs_are_files": "files",
    "BLOB_MODE": "objects",
    "EMPTY_TREE": "objects",
    "TREE_MODE": "objects",
    "CommitMeta": "objects",
    "diff_task_files": "objects",
    "diff_moves": "objects",
    "diff_trees": "objects",
    "remember_delta": "deltas",
    "edit_tree": "objects",
    "ls_task_files": "objects",
    "read_blob": "objects",
    "iter_blobs": "objects",
    "read_commit": "objects",
    "read_path": "objects",
    "remember_edit": "objects",
    "signature": "objects",
    "tree_of": "objects",
    "warm_up": "objects",
    "write_blob": "objects",
    "write_blobs": "objects",
    "write_commit": "objects",
    "TASK_PATHSPECS": "plain",
    "config_get": "plain",
    "hooks_dir": "plain",
    "quick": "plain",
    "run": "plain",
    "staged_paths": "plain",
    "staged_task_paths": "plain",
    "PushResult": "remote",
    "fetch_branch": "remote",
    "prefetch_branch": "remote",
    "push": "remote",
    "pushes_here": "remote",
    "Repo": "repo",
    "commit_messages": "core",
    "messages_matching": "core",
    "path_kind": "objects",
    "PathRevision": "history",
    "path_history": "history",
    "LogEntry": "trail",
    "ahead_behind": "trail",
    "commit_times": "trail",
    "log_entries": "trail",
}


__getattr__ = attributes(__name__, _HOMES, globals())
