"""Who is calling: bearer tokens stored as hashes, and the identity of the current call."""
