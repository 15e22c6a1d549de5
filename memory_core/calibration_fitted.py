"""Fitted calibrations (data): written by ``scripts/fit_calibration.py --write``, not by hand."""

from __future__ import annotations

from .calibration import Calibration

#: The default profile's abstention gate (``abstain_below``), chosen with the model.
GATES: dict[str, float] = {'local-v1': 0.4}

CALIBRATIONS: dict[str, Calibration] = {
    'local-v1': Calibration(
        name='local-v1',
        features=('fused', 'inv_rank', 'top_cos', 'top_kw', 'known', 'top_both', 'top_fused'),
        mean=(0.135955, 0.116635, 0.427781, 0.26803, 0.668564, 0.84185, 0.570231),
        scale=(0.153089, 0.179235, 0.220695, 0.192079, 0.358958, 0.364882, 0.264308),
        weights=(1.391507, 0.626116, 0.726146, 0.212631, 0.903465, 0.310745, -2.106604),
        intercept=-6.649133,
        iso_x=(6e-05, 0.000189, 0.000378, 0.000578, 0.000789, 0.000912, 0.001045, 0.001532,
            0.002096, 0.002781, 0.003649, 0.00387, 0.004285, 0.004796, 0.005626, 0.007874, 0.01222,
            0.016541, 0.019739, 0.026111, 0.033827, 0.041579, 0.053516, 0.086495, 0.152453,
            0.25618, 0.508686, 0.761196, 0.860717, 0.929737),
        iso_y=(0.0, 0.000648, 0.000819, 0.000907, 0.000943, 0.001297, 0.001368, 0.001506, 0.002037,
            0.002525, 0.002593, 0.00389, 0.00389, 0.005183, 0.005186, 0.010156, 0.011929, 0.023331,
            0.026573, 0.03176, 0.032417, 0.04536, 0.047996, 0.077117, 0.108949, 0.169799, 0.509265,
            0.849106, 0.86511, 0.926166),
        note=(
            'LoCoMo dev Markdown (997 q), XQuAD en+zh (2380 q), 2240 probe '
            'queries; scripts/fit_calibration.py'
        ),
    ),
}
