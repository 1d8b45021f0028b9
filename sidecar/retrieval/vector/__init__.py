"""Vector indexes: the contract, exact (dense numpy), hnswlib, the adaptive index that
switches between them, its persistence and its config."""
