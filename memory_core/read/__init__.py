"""Floor 4, the read path: a question → the legs' candidates → fusion → hits, and exact lines.

- :mod:`.query`: tokens and FTS5 MATCH strings; :mod:`.keyword`: the keyword leg's plan
  (the postings sidecar, or FTS5 itself); :mod:`.search`: both legs → :class:`.Candidates`,
  fetched once; :mod:`.candidates`: the values that flow to fusion;
- :mod:`.fusion`: pure ``fuse(candidates, settings)``, with :mod:`.expansion`,
  :mod:`.rerank` (MMR) and :mod:`.calibration` (scores → probabilities);
- :mod:`.reading`: ``memory_get``'s exact lines; :mod:`.browse`: bounded reads for the
  workbench.
"""
