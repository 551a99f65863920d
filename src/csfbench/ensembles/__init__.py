"""Deep ensembles over runs of one configuration, scored from their members' stored outputs (no forward pass):
the ensemble's own CSFs (:mod:`csfbench.ensembles.scores`) and the members' files with the check that they hold
the same samples in the same order (:mod:`csfbench.ensembles.members`)."""
