"""Retrieval: the contract (``contract``) and its engines."""
