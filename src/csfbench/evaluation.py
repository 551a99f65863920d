"""Long-format metric rows for one (model, fit group, evaluation set), one per value (:data:`COLUMNS`).

Which schemes apply (Claros-Olivares & Brockmeier, §4.1; Yang et al., ICLR 2024, Table 1; docs/methods.md):

- ``misclf`` on the ID splits (val, test) and on every covariate/adversarial set, which keep labels;
- ``correct_vs_ood``, ``newclass`` and ``failure`` for every shifted set against the ID test set.

MC-dropout variants are judged against the MC-mean prediction's correctness (``mcd`` = True rows).
Metrics undefined for a set (e.g. AUROC when nothing fails) are omitted by
:func:`csfbench.metrics.evaluate`, which logs why.
"""
from __future__ import annotations

import pandas as pd

from csfbench.metrics import build_scheme, evaluate
from csfbench.specs import EvalSet, ModelSpec

COLUMNS = ["source", "backbone", "paradigm", "dropout", "reward", "run", "mcd", "csf", "variant", "tuning_protocol",
           "dataset", "shift_type", "regime", "scheme", "split", "metric", "value"]
SHIFT_SCHEMES = ("correct_vs_ood", "newclass", "failure")


def schemes_for(eval_set: EvalSet) -> tuple[str, ...]:
    """The schemes evaluated for an evaluation set (``eval_set``: name, shift_type)."""
    if eval_set.shift_type == "id":
        return ("misclf",)
    if eval_set.shift_type in ("covariate", "adversarial"):
        return ("misclf",) + SHIFT_SCHEMES
    return SHIFT_SCHEMES


def metric_rows(spec: ModelSpec, eval_set: EvalSet, scores: dict, id_scores: dict | None) -> pd.DataFrame:
    """Rows for every mode/CSF/variant/scheme/metric of one scores file.

    ``scores`` and ``id_scores`` are :func:`csfbench.csf.store.read_scores` mappings of the set and
    of the ID test set (``id_scores`` is needed unless the set is an ID split).  A mode of ``scores`` may
    carry ``"protocols"``, {(csf, variant): the protocol that chose its hyper-parameters}
    (:func:`csfbench.csf.engine.tuning_protocols`), written to the ``tuning_protocol`` column (None without).
    """
    schemes = schemes_for(eval_set)
    if any(s in SHIFT_SCHEMES for s in schemes) and id_scores is None:
        raise ValueError(f"{eval_set.name}: the ID test scores are needed for the {SHIFT_SCHEMES} schemes")
    base = {k: getattr(spec, k) for k in ("source", "backbone", "paradigm", "dropout", "reward", "run")}
    base.update(dataset=eval_set.name, shift_type=eval_set.shift_type, regime=eval_set.regime,
                split="val" if eval_set.name == "val" else "test")
    rows = []
    for mode, data in scores.items():
        protocols = data.get("protocols", {})
        for (csf, variant), conf in sorted(data["scores"].items()):
            for scheme in schemes:
                if scheme == "misclf":
                    built = build_scheme("misclf", conf, data["correct"])
                else:
                    ref = id_scores[mode]
                    built = build_scheme(scheme, ref["scores"][(csf, variant)], ref["correct"], conf)
                for metric, value in evaluate(built).items():
                    rows.append({**base, "mcd": mode == "mcd", "csf": csf, "variant": variant,
                                 "tuning_protocol": protocols.get((csf, variant)), "scheme": scheme,
                                 "metric": metric, "value": float(value)})
    return pd.DataFrame(rows, columns=COLUMNS)
