"""michi: a git repository as a task tracker for one developer and many AI agents."""

__version__ = "0.1.0"
