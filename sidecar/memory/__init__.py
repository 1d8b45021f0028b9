"""The memory write and read path: validation, embedding, gates, listeners; no protobuf."""
