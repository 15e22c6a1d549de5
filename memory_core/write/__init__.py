"""Floor 3, the write path: files → chunks → embeddings → the store.

- :mod:`.sources`: which files are memory and what text each gives (transcripts rendered);
- :mod:`.chunking`: text → chunks that remember their line ranges;
- :mod:`.sync`: the indexer that drives sources → chunking → embeddings → store;
- :mod:`.rebuild`: why a sync rebuilds.
"""
