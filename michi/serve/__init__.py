"""The pre-loaded server (ADR 0016): a warm, forking michi that serves the `task` verbs of fresh
`michi` processes, so an agent's call in a loop pays Python's start-up but not michi's imports."""
