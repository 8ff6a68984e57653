"""The storage port and its SQLite implementation: the only package that holds SQL
(with ``memplug.store.db``).

``memplug.store.ports`` states what the services need, as Protocols;
``memplug.store.sqlite.Store`` is the SQLite implementation of ``ports.Storage`` and
composes one sub-store per concern. Services above type against the ports and never
talk to SQLite directly. This file imports nothing, so that an idle hook can read its
cursors (``memplug.store.peek``) without loading the stores.
"""
