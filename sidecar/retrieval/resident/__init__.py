"""Scopes resident on demand: which memories a sidecar holds in its indexes (see keys, lru)."""
