"""Fitted calibrations (data): written by ``scripts/fit_calibration.py --write``, not by hand."""

from __future__ import annotations

from .calibration import Calibration

#: The default profile's abstention gate (``abstain_below``), chosen with the model.
GATES: dict[str, float] = {'local-v1': 0.35}

CALIBRATIONS: dict[str, Calibration] = {
    'local-v1': Calibration(
        name='local-v1',
        features=('fused', 'inv_rank', 'top_cos', 'top_kw', 'known', 'top_both', 'top_fused'),
        mean=(0.127612, 0.115659, 0.418072, 0.269104, 0.669928, 0.843224, 0.560855),
        scale=(0.148201, 0.178529, 0.214637, 0.192514, 0.357905, 0.363589, 0.259241),
        weights=(1.342072, 0.59688, 0.690499, 0.205161, 0.989985, 0.280575, -2.099229),
        intercept=-6.466459,
        iso_x=(6.5e-05, 0.000192, 0.000398, 0.000584, 0.000681, 0.000694, 0.001074, 0.001588,
            0.00198, 0.002469, 0.002825, 0.003228, 0.003503, 0.003863, 0.004444, 0.005631,
            0.006995, 0.009139, 0.012657, 0.016042, 0.019807, 0.027365, 0.042126, 0.058743,
            0.078261, 0.108711, 0.160491, 0.26098, 0.49884, 0.752708, 0.86098, 0.931765),
        iso_y=(0.0, 0.000366, 0.000591, 0.001025, 0.00128, 0.001281, 0.001304, 0.001708, 0.001922,
            0.002135, 0.002329, 0.003203, 0.003843, 0.003845, 0.004026, 0.004575, 0.007261,
            0.011531, 0.014944, 0.018581, 0.026258, 0.032459, 0.041621, 0.061491, 0.069178,
            0.087191, 0.134426, 0.193466, 0.446097, 0.851582, 0.859705, 0.947503),
        note=(
            'LoCoMo dev Markdown (997 q), XQuAD en+zh (2380 q), 2240 probe '
            'queries; scripts/fit_calibration.py'
        ),
    ),
}
