"""Floor 1, the ground: what every layer of the engine shares, importing nothing above it.

- :mod:`.config`: the one configuration tree, every setting declared once (default, bounds,
  label, OpenClaw key) with OpenClaw's defaults; :mod:`.config_check`, its one validator;
  :mod:`.fitted`, the fitted calibrations' data (names and gates).
- :mod:`.text`: UTF-16 and CJK measures; :mod:`.supersession`: which memory line a later line
  replaced (pure, over dated statements).
- :mod:`.dates`, :mod:`.fileio` (atomic and shared writes, the JSONL reader), :mod:`.locations`,
  :mod:`.indexfiles` (every file beside an index, named once), :mod:`.sql` (the one SQLite
  library), :mod:`.synclock`, :mod:`.topk`, :mod:`.sets`, :mod:`.lazy`, :mod:`.ray_session`,
  :mod:`.version`.
"""
