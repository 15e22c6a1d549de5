"""Fitted calibrations (data): written by ``scripts/fit_calibration.py --write``, not by hand."""

from __future__ import annotations

from .calibration import Calibration

#: The default profile's abstention gate (``abstain_below``), chosen with the model.
GATES: dict[str, float] = {'local-v1': 0.4}

CALIBRATIONS: dict[str, Calibration] = {
    'local-v1': Calibration(
        name='local-v1',
        features=('fused', 'inv_rank', 'top_cos', 'top_kw', 'known', 'top_both', 'top_fused'),
        mean=(0.125443, 0.116374, 0.4264, 0.268779, 0.66877, 0.842492, 0.506291),
        scale=(0.13957, 0.179061, 0.221684, 0.192755, 0.358804, 0.364279, 0.255741),
        weights=(1.533396, 0.564759, 0.638949, 0.215818, 0.844066, 0.278258, -2.276999),
        intercept=-6.603962,
        iso_x=(9.1e-05, 0.000196, 0.000263, 0.000319, 0.000427, 0.000752, 0.00101, 0.001077,
            0.001234, 0.001373, 0.001493, 0.001669, 0.002178, 0.003331, 0.004184, 0.004729,
            0.006022, 0.0073, 0.008017, 0.010472, 0.013539, 0.014927, 0.017324, 0.020492, 0.023327,
            0.029502, 0.03831, 0.047987, 0.072687, 0.114496, 0.169522, 0.277053, 0.526855,
            0.761579, 0.861413, 0.933175),
        iso_y=(0.0, 0.000259, 0.000323, 0.000431, 0.000529, 0.000564, 0.00097, 0.001035, 0.001185,
            0.001293, 0.001616, 0.001617, 0.002457, 0.003556, 0.006468, 0.006789, 0.008406,
            0.009051, 0.009694, 0.011639, 0.014228, 0.01551, 0.023283, 0.023292, 0.031032,
            0.033609, 0.036218, 0.04656, 0.055606, 0.107332, 0.1409, 0.206959, 0.502779, 0.834196,
            0.869987, 0.937984),
        note=(
            'LoCoMo dev Markdown (997 q), XQuAD en+zh (2380 q), 2240 probe '
            'queries; scripts/fit_calibration.py'
        ),
    ),
}
