"""Execute the notebooks and store them with their outputs (issue #35: a reader on a code host
sees the results), deterministically: cells run in order in a fresh kernel from ``notebooks/``,
execution counts are 1, 2, 3 …, and the timing and kernel metadata nbclient adds are dropped,
so that a rerun with the same results rewrites the same bytes. CI runs them through nbmake
(``make test``), which checks they still run.

    .venv/bin/python scripts/run_notebooks.py [notebooks/01-guided-tour.ipynb …] [--check]

``--check`` executes without writing and fails when a cell raises.

A cell tagged ``licensed-data`` shows text of an evaluation set that lives beside the project
(``../shared/datasets``: LoCoMo is CC BY-NC, licensed for evaluation, not for redistribution
inside the product). Its outputs are not stored; a note says how to see them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
LICENSED = "licensed-data"
NOT_STORED = ("(output not stored: it quotes an evaluation set licensed for evaluation only; "
              "run the notebook with ../shared beside the project to see it)\n")


def scrub(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """``nb`` with the outputs of its ``licensed-data`` cells replaced by a note."""
    for cell in nb.cells:
        if cell.cell_type == "code" and LICENSED in cell.metadata.get("tags", []):
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=NOT_STORED)]
    return nb


def execute(path: Path, timeout: int = 1800) -> nbformat.NotebookNode:
    """``path`` executed in a fresh kernel, its metadata made stable."""
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=timeout, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    count = 0
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type == "code":
            count += 1
            cell.execution_count = count
            for out in cell.get("outputs", []):
                if "execution_count" in out:
                    out["execution_count"] = count
    for k in ("widgets",):
        nb.metadata.pop(k, None)
    return scrub(nb)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("paths", nargs="*", type=Path, help="notebooks (default: all)")
    ap.add_argument("--check", action="store_true", help="execute only, write nothing")
    args = ap.parse_args()
    paths = args.paths or sorted(NOTEBOOKS.glob("*.ipynb"))
    for p in paths:
        print(f"executing {p.name}…", file=sys.stderr, flush=True)
        nb = execute(p)
        if not args.check:
            nbformat.write(nb, p)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
