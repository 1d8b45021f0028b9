"""Prometheus metrics: definitions (``registry``), the HTTP endpoint (``http``), its config."""
