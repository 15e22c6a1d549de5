"""Small primitives shared by every layer of the engine, each defined once with one meaning.

Nothing here imports the rest of ``memory_core``: any module may import these, and they import
nobody, so they can never close an import cycle.

- :mod:`.dates`: milliseconds per day, "now", and the dated-file name rules.
- :mod:`.lazy`: numpy and a package's public names, imported on first use (start-up time).
- :mod:`.fileio`: atomic replacement of a file, the JSONL line reader, the mtime/size test.
- :mod:`.locations`: where the evaluation data and the caches live.
- :mod:`.sets`: Jaccard similarity of token sets.
- :mod:`.sql`: running a migration's statements inside its transaction.
"""
