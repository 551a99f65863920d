"""The workflow layer: validated settings (:mod:`.settings`), the grid of jobs (:mod:`.grid`) and the file
layout of a run (:mod:`.paths`).  The domain packages (``csfbench.csf``, ``csfbench.metrics``, ...) import
none of it; the stage modules (``csfbench.stages``) hand the domain code typed settings and specs."""
