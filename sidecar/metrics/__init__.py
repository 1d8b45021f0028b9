"""Prometheus metrics: definitions (``registry``), the HTTP endpoint (``http``, on the bounded
server of ``bounded``, ``deadline``, ``limits`` and ``refusals``), its config."""
