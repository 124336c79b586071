"""Recall of chats written through smart ingest against the same chats written with add_many."""
