"""Conversation features of Inject: what a channel's earlier turns add to a turn's block.

``query_context`` steers a follow-up's search with the recent turns; ``focus`` offers what
was written next to what the conversation drew on. The injection pipeline enters this room
through ``room.Conversation``; the per-channel state it reads is stored and loaded by
``sidecar.injection.channels``, which never searches.
"""
