"""Graph retrieval: expansion from seed memories along stored edges."""
