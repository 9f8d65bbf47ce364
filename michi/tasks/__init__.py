"""Task files and the logic above them: model, storage format, transitions, ids, domains, claims, index.

Nothing here runs git or imports GitPython (ADR 0002); the transaction engine hands in a `TaskTree`.
"""
