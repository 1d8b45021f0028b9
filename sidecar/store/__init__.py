"""The store: the contract (``contract``), SQLite (``db``, the only apsw import) and
PostgreSQL (``postgres/``, the only psycopg imports) backends, and the repositories."""
