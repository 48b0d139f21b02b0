"""The core: clocks, events, the bus, the composed prompt, the composer (its folder: the layout,
placements, budgets and caps), WorkingMemory.

It imports neither IPython nor ipywidgets, and nothing above it (trinkets, instruments, the
session, display or the Jupyter layer). It exports nothing itself: import each name from the module
that defines it (``wm_kernel.core.working_memory.WorkingMemory``) or from the front door
(``from wm_kernel import WorkingMemory``).
"""
