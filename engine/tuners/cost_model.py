"""XGBoost cost model in AutoTVM's manner: a pairwise ranking of configs.

The model learns which of two configs of the same workload is faster
(`rank:pairwise`); its predictions are scores on no particular scale, only
their order matters. Scores are FLOP/s normalised within each group, so a
failed config (score 0) ranks below every one that ran.

Transfer learning: a base model fitted on earlier records (other workloads,
other GPUs) gives the starting margin of the model fitted on this task's
measurements, discounted as those grow (halved every 64 samples, dropped below
5 %), as AutoTVM's XGBoostCostModel does.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import xgboost as xgb

_PARAMS = {
    "objective": "rank:pairwise",
    "lambdarank_pair_method": "mean",
    "lambdarank_num_pair_per_sample": 8,
    "max_depth": 3,
    "gamma": 0.0001,
    "min_child_weight": 1,
    "eta": 0.3,
    "lambda": 1.0,
    "alpha": 0,
    "verbosity": 0,
}
_BASE_DISCOUNT_HALF_LIFE = 64.0
_BASE_DISCOUNT_FLOOR = 0.05


class XGBoostCostModel:
    def __init__(self, seed: int = 0, num_boost_round: int = 80, nthread: int | None = None):
        self.params = dict(_PARAMS, seed=seed)
        if nthread:
            self.params["nthread"] = nthread
        self.num_boost_round = num_boost_round
        self.booster: xgb.Booster | None = None
        self.base: XGBoostCostModel | None = None
        self._sample_size = 0

    def fit(self, x: np.ndarray, scores: np.ndarray, groups: Sequence[int] | None = None) -> bool:
        """Fit to feature rows and their FLOP/s (0 for failures); False when nothing ran."""
        groups = list(groups) if groups else [len(x)]
        labels = _normalise(scores, groups)
        if not np.any(labels > 0):
            return False
        data = xgb.DMatrix(x, label=labels, missing=np.nan, nthread=self.params.get("nthread", -1))
        data.set_group(groups)
        self._sample_size = len(x)
        discount = self._base_discount()
        if self.base is not None and discount < _BASE_DISCOUNT_FLOOR:
            self.base = None
        if self.base is not None:
            data.set_base_margin(discount * self.base.predict(x))
        self.booster = xgb.train(self.params, data, num_boost_round=self.num_boost_round)
        return True

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Scores (raw margins): higher is predicted faster."""
        base = self._base_discount() * self.base.predict(x) if self.base is not None else None
        if self.booster is None:
            if base is None:
                raise RuntimeError("the cost model has not been fitted")
            return base
        # In-place prediction skips building a DMatrix, which dominated the annealer's many
        # small calls (128 rows each).
        # Rows always have the task's feature columns, so the per-call name check is skipped
        # (a tenth of a call that the annealer makes hundreds of times a plan).
        return self.booster.inplace_predict(x, predict_type="margin", missing=np.nan, base_margin=base,
                                            validate_features=False)

    @property
    def can_predict(self) -> bool:
        """Fitted, or started from a base model (transfer): `predict` has something to say."""
        return self.booster is not None or self.base is not None

    def use_base(self, base: "XGBoostCostModel") -> None:
        """Start from a model fitted on earlier records (transfer learning)."""
        self.base = base

    def spawn(self) -> "XGBoostCostModel":
        """An unfitted model with the same settings, to fit as a base model."""
        return XGBoostCostModel(self.params["seed"], self.num_boost_round, self.params.get("nthread"))

    def _base_discount(self) -> float:
        return 1.0 / (2.0 ** (self._sample_size / _BASE_DISCOUNT_HALF_LIFE))


def _normalise(scores: np.ndarray, groups: Sequence[int]) -> np.ndarray:
    labels = np.asarray(scores, dtype=np.float64).copy()
    start = 0
    for size in groups:
        top = labels[start : start + size].max(initial=0.0)
        if top > 0:
            labels[start : start + size] /= top
        start += size
    return labels
