"""Domain services: pure Python over the store and the embedder; no protobuf."""
