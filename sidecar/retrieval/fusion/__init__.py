"""Fusion of the ranked lists of every retrieval source into one ranking."""
