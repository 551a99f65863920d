"""CSFs that need the network (docs/methods.md §5.14): ODIN with input perturbation, GRAM and RankFeat.

They run a trained :class:`~csfbench.models.network.Classifier` on images (``detectors``), unlike the CSFs
of :mod:`csfbench.csf`, which read stored outputs; ``store`` holds their fit and per-set score files."""
