"""Failure-detection and OOD metrics on ``(confidence, residual)`` arrays.

Conventions shared by every function: higher ``confidence`` = more likely a success (more
in-distribution); ``residual`` is the loss of a prediction in [0, 1], ``1 - correct`` for
classification, so 0 = success and 1 = failure.  Values are fractions in [0, 1] (AURC/AUGRC are
stored unscaled; tables display them ×1000).  Bad input raises :class:`MetricInputError` (a
``ValueError``); a metric that needs both classes raises :class:`UndefinedMetricError` on a
single-class set.  :mod:`~csfbench.metrics.schemes` builds the evaluation sets of the failure schemes;
:func:`metric` returns the function of any metric name of the results table (:mod:`~csfbench.metrics.registry`).
"""
from csfbench.metrics._inputs import MetricInputError, UndefinedMetricError
from csfbench.metrics.classification import aupr_in, aupr_out, auroc, ece, fpr_at_tpr, mce
from csfbench.metrics.risk_coverage import (
    augrc,
    augrc_optimal,
    aurc,
    aurc_optimal,
    e_augrc,
    e_aurc,
    rc_curve,
)
from csfbench.metrics.registry import (
    DEFAULT_METRICS,
    PRESETS,
    UnknownMetricError,
    higher_is_better,
    metric,
    metric_names,
    metric_spec,
)
from csfbench.metrics.schemes import SCHEMES, SchemeData, build_scheme, evaluate

__all__ = [
    "DEFAULT_METRICS", "PRESETS", "SCHEMES", "MetricInputError", "SchemeData", "UndefinedMetricError",
    "UnknownMetricError", "aupr_in", "aupr_out", "augrc", "augrc_optimal", "aurc", "aurc_optimal", "auroc",
    "build_scheme", "e_augrc", "e_aurc", "ece", "evaluate", "fpr_at_tpr", "higher_is_better", "mce", "metric",
    "metric_names", "metric_spec", "rc_curve",
]
