"""Injection channels as resources: who owns each one, and dropping channels left idle."""
