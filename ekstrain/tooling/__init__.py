"""The render's tooling: helm lookup, chart digests, upstream files and schema validation, the lock file."""
