"""Views of results for people (rich), imported only when a person is shown something (ADR 0002)."""
