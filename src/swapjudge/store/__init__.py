"""The run store: one SQLite file (WAL) holding runs, their calls, and a cache of judge replies.

Every call is committed in its own transaction the moment its reply is in, so a `kill -9` at any point leaves
a consistent file in which every finished call is kept; the next run of the same configuration resumes the
unfinished run and makes only the missing calls. The cache is keyed by (judge hash, prompt hash): the same
judge configuration is never paid twice for the same prompt, across runs too.

The file and its schema are `schema`, its connection (every SQLite failure said in words: damaged, disk full,
read-only) `connection`, the write path `writer`, the read model `reader`; `analysis` analyses a stored run.
`Store` is both, for the runner and the commands that read what it wrote.
"""

from __future__ import annotations

from swapjudge.store.batches import BatchLedger
from swapjudge.store.connection import StoreDamagedError, StoreError, StoreFullError, StoreReadOnlyError
from swapjudge.store.reader import StoreReader
from swapjudge.store.schema import PROVENANCE_COLUMNS, SCHEMA_VERSION, CachedReply, CallRecord, RunInfo
from swapjudge.store.writer import StoreWriter

__all__ = ["PROVENANCE_COLUMNS", "SCHEMA_VERSION", "CachedReply", "CallRecord", "RunInfo", "Store",
           "StoreDamagedError", "StoreError", "StoreFullError", "StoreReadOnlyError"]


class Store(StoreWriter, StoreReader, BatchLedger):
    """A run store: the write path, the read model and the batch ledger over one SQLite connection."""
