"""The keyword leg, in one package: what FTS5 is here, the SQL the leg reads with, its query
plans and the postings sidecar that answers the default profile's OR query.

* :mod:`.fts`: the FTS tables' names and bm25's constants and formulas, each written once (a
  leaf: the store, the calibration and the rest import it);
* :mod:`.reads`: every FTS5 read of a search, as SQL text run through the store's read
  primitives (the store keeps the connection, the schema and the writes);
* :mod:`.plans`: a query → MATCH string, table and ranked rows (the reference's AND query; the
  OR query by the postings sidecar where one is fresh, else FTS5's full query: one answer);
* :mod:`.postings`: the sidecar, its reads and its build from FTS5's vocabulary.

The MATCH strings themselves come from :mod:`memory_core.query` (``reference_fts_query``,
``or_fts_query``): a pure base module whose tokens, dates and query limits fusion and the MCP
server use too, so it stays below the store.

This ``__init__`` imports nothing: the store imports :mod:`.fts` while it is itself being
imported, and :mod:`.plans` imports the store.
"""
