"""All of michi's git access, as small named functions: one git action each, the repo passed in.

One package, the only place that runs git or imports GitPython (ADR 0002), in modules by job:
`plain` (plain subprocesses for the hook's hot path, ADR 0005), `files` (refs and config read from the
files, ADR 0008), `core` (the repository through GitPython: refs, the user's index), `remote` (fetch and
push) and `objects` (blobs, trees, commits). GitPython itself is imported lazily inside the functions:
`import git` costs ~85 ms, which the pre-commit hook and the lock commands must not pay.
"""

from michi.git.core import NO_PROMPT as NO_PROMPT
from michi.git.core import Head as Head
from michi.git.core import commit_messages as commit_messages
from michi.git.core import head as head
from michi.git.core import is_ancestor as is_ancestor
from michi.git.core import merge_base as merge_base
from michi.git.core import messages_matching as messages_matching
from michi.git.core import open_repo as open_repo
from michi.git.core import read_tree_update as read_tree_update
from michi.git.core import ref_oid as ref_oid
from michi.git.core import remote_default_branch as remote_default_branch
from michi.git.core import remote_exists as remote_exists
from michi.git.core import rev_list as rev_list
from michi.git.core import update_ref as update_ref
from michi.git.files import config_fingerprint as config_fingerprint
from michi.git.files import operation_in_progress as operation_in_progress
from michi.git.files import read_ref as read_ref
from michi.git.files import read_ref_file as read_ref_file
from michi.git.files import refs_are_files as refs_are_files
from michi.git.objects import BLOB_MODE as BLOB_MODE
from michi.git.objects import EMPTY_TREE as EMPTY_TREE
from michi.git.objects import TREE_MODE as TREE_MODE
from michi.git.objects import CommitMeta as CommitMeta
from michi.git.objects import diff_task_files as diff_task_files
from michi.git.objects import diff_trees as diff_trees
from michi.git.objects import edit_tree as edit_tree
from michi.git.objects import ls_task_files as ls_task_files
from michi.git.objects import path_kind as path_kind
from michi.git.objects import read_blob as read_blob
from michi.git.objects import read_commit as read_commit
from michi.git.objects import read_path as read_path
from michi.git.objects import signature as signature
from michi.git.objects import tree_of as tree_of
from michi.git.objects import warm_up as warm_up
from michi.git.objects import write_blob as write_blob
from michi.git.objects import write_commit as write_commit
from michi.git.plain import TASK_PATHSPEC as TASK_PATHSPEC
from michi.git.plain import config_get as config_get
from michi.git.plain import hooks_dir as hooks_dir
from michi.git.plain import quick as quick
from michi.git.plain import run as run
from michi.git.plain import staged_paths as staged_paths
from michi.git.plain import staged_task_paths as staged_task_paths
from michi.git.remote import PushResult as PushResult
from michi.git.remote import fetch_branch as fetch_branch
from michi.git.remote import push as push
