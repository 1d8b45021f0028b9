"""SQLite persistence (apsw). apsw is imported only in ``sidecar.store.db``."""
