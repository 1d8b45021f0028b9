"""Lexical retrieval: BM25 over a tokenizer shared by documents and queries."""
