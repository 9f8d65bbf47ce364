"""The git hooks (ADR 0005): no hand-made commit while another process holds the repo lock, and no push
of michi's unsynced offline commits.

`run` is the entry point git calls on every commit; it imports only `os` and `sys` until it finds
something to check (ADR 0005). `check` is the full judgement, `install` writes and removes the hooks,
`prepush` is the pre-push hook's check. Nothing is imported here on purpose: importing this package must
stay free for the fast path.
"""
