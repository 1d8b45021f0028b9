"""Retrieval: the contract (``contract``), the hybrid engine (``hybrid``) over its in-memory
mirror (``mirror``), and one folder per source kind: ``vector/``, ``lexical/``, ``graph/``,
fused by ``fusion/``. ``scopes`` gives the vault exact per-scope scans of the same vectors."""
