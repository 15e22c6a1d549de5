"""The fitted calibrations' data (``calibration_fitted.json``, package data beside this file):
written by ``scripts/fit_calibration.py --write``, read once here.

The configuration needs only the fitted models' names and gates (which ``calibration`` values
exist, and the default profile's ``abstain_below``); the read path builds the models
themselves from the same data (:func:`memory_core.read.calibration.load_fitted`). So the data
and its reader live on the ground floor, and the configuration imports nothing above it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FITTED_FILE = Path(__file__).with_name("calibration_fitted.json")


def read_fitted(path: Path = FITTED_FILE) -> dict[str, Any]:
    """The data file as JSON: ``{"gates": {name: gate}, "calibrations": {name: fields}}``."""
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


#: Each fitted model's gate (the default profile's ``abstain_below``), by the model's name.
GATES: dict[str, float] = {k: float(v) for k, v in read_fitted()["gates"].items()}
