"""Dependency cycles among open tasks: each is a set of tasks none of which can ever start.

`task modify --depends` refuses to close a cycle (ADR 0007), but a hand edit or an import can still bring
one in; `michi doctor` names them. Pure: a mapping of uuid -> the uuids it depends on, no git.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def cycles(depends: Mapping[str, Sequence[str]]) -> list[list[str]]:
    """Every group of tasks that depend on each other (a strongly connected component of two or more, or
    a task that depends on itself), each sorted, the groups in order of their first uuid. Only the tasks
    in `depends` count: give it the open ones. Iterative (Tarjan's), so 50,000 tasks cannot overflow."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in depends:
        if root in index:
            continue
        work: list[tuple[str, int]] = [(root, 0)]
        while work:
            node, at = work.pop()
            if at == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            deps = [d for d in depends[node] if d in depends]
            for i in range(at, len(deps)):
                dep = deps[i]
                if dep not in index:
                    work.append((node, i + 1))
                    work.append((dep, 0))
                    break
                if dep in on_stack:
                    low[node] = min(low[node], index[dep])
            else:
                if low[node] == index[node]:
                    group: list[str] = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1 or node in depends[node]:
                        found.append(sorted(group))
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
    return sorted(found)
