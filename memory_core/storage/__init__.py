"""Floor 2: the one SQLite file per index and the files beside it.

- :mod:`.store`: the connection, the schema (chunks, FTS5, sqlite-vec, the embedding cache,
  the supersessions) and every write; :mod:`.migrations`: the numbered schema steps;
  :mod:`.indexfile`: whether a file is our index.
- :mod:`.fts`: the FTS tables' names and bm25's constants; :mod:`.fts_reads`: the keyword
  leg's SQL text, run through the store's read primitives.
- The sidecars: :mod:`.vectors` (the mapped vector matrix), :mod:`.postings` (the OR query's
  postings), :mod:`.sidecar` (their block layout); :mod:`.swap`: a rebuilt index put in place.

It imports the ground floor only: not the embeddings (its floor-mate), not the read or write path.
"""
