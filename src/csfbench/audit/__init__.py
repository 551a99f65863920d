"""The self-audit of a run: checks that read its results, fits, rankings, features and prediction sets and report
each finding with its cause in plain words and what to change (docs/methods.md, "Self-audit").

Like the other domain packages it takes plain records and DataFrames (:class:`~csfbench.audit.records.AuditInputs`,
read from given files by :mod:`csfbench.audit.readers`) and plain thresholds
(:class:`~csfbench.audit.findings.Thresholds`: the config's ``audit`` section), and knows nothing of the
configuration or the file layout of a run; :mod:`csfbench.stages.audit` is the job.  Every check is a function
``(inputs, thresholds) -> list[Finding]`` (:data:`~csfbench.audit.checks.CHECKS`):

* :mod:`~csfbench.audit.result_checks` — OOD AUROC intervals below chance; bootstrap intervals too wide;
* :mod:`~csfbench.audit.fit_checks` — hyper-parameters tuned at the edge of their range; neighbour counts that
  cover much of their bank; CSFs recorded as undefined; tuned values where a CSF equals another
  (:mod:`~csfbench.audit.equivalences`);
* :mod:`~csfbench.audit.model_checks` — MC dropout with few passes; accuracy near chance; prediction sets that
  hold every label;
* :mod:`~csfbench.audit.ranking_checks` — ranking cells with too few independent blocks.
"""
from csfbench.audit.checks import CHECKS, run_checks
from csfbench.audit.findings import COLUMNS, Finding, Thresholds, findings_frame
from csfbench.audit.records import AccuracyRecord, AuditInputs, CellRecord, FitRecord

__all__ = ["CHECKS", "COLUMNS", "AccuracyRecord", "AuditInputs", "CellRecord", "Finding", "FitRecord", "Thresholds",
           "findings_frame", "run_checks"]
