"""The PostgreSQL backend of the store contract: one database shared by many sidecars."""
