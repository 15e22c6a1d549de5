"""Fitted calibrations (data): written by ``scripts/fit_calibration.py --write``, not by hand."""

from __future__ import annotations

from .calibration import Calibration

#: The default profile's abstention gate (``abstain_below``), chosen with the model.
GATES: dict[str, float] = {'local-v1': 0.4}

CALIBRATIONS: dict[str, Calibration] = {
    'local-v1': Calibration(
        name='local-v1',
        features=('fused', 'inv_rank', 'top_cos', 'top_kw', 'known', 'top_both', 'top_fused'),
        mean=(0.13648, 0.116374, 0.4264, 0.268779, 0.66877, 0.842281, 0.5703),
        scale=(0.153409, 0.179061, 0.221684, 0.192755, 0.358804, 0.364477, 0.264442),
        weights=(1.391323, 0.60618, 0.661131, 0.212268, 0.95695, 0.298116, -2.059467),
        intercept=-6.540442,
        iso_x=(6e-05, 0.000205, 0.000612, 0.000894, 0.001105, 0.001739, 0.002443, 0.002977,
            0.003547, 0.003949, 0.004464, 0.005363, 0.006554, 0.008758, 0.012839, 0.016171,
            0.020279, 0.028745, 0.037351, 0.052253, 0.078969, 0.109251, 0.164038, 0.273329,
            0.516459, 0.760142, 0.862296, 0.930335),
        iso_y=(0.0, 0.000353, 0.000905, 0.001293, 0.001485, 0.001859, 0.002155, 0.002457, 0.002586,
            0.002587, 0.004914, 0.004914, 0.007436, 0.01013, 0.012931, 0.018102, 0.02371, 0.031036,
            0.045266, 0.05171, 0.076306, 0.082805, 0.129299, 0.192606, 0.522774, 0.856589,
            0.857697, 0.931525),
        note=(
            'LoCoMo dev Markdown (997 q), XQuAD en+zh (2380 q), 2240 probe '
            'queries; scripts/fit_calibration.py'
        ),
    ),
}
