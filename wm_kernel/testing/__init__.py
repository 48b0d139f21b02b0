"""Tests for prompts, no model needed: a cache-stability checker, assertion helpers and a pytest plugin.

- :mod:`wm_kernel.testing.stability`: :func:`~wm_kernel.testing.stability.check_stability` replays a
  scenario under perturbations that must not move a cached byte (another ``PYTHONHASHSEED``, dict
  and set order, the clock within its minute, ``TZ`` and locale, the tool order) and reports each
  section that moved, where, and what it costs (``python -m wm_kernel check`` on the command line).
- :mod:`wm_kernel.testing.assertions`: section-level assertions (present in turns a..b, a placement
  under N tokens, a byte-stable cached prefix, a hit rate, no untrusted text escaping its markup).
- :mod:`wm_kernel.testing.snapshot`: golden files compared section by section.
- :mod:`wm_kernel.testing.plugin`: the pytest plugin (``wm_session``, ``prompt_snapshot``,
  ``--wm-update``), installed with the package through the ``pytest11`` entry point.

This package imports nothing on its own, so the pytest plugin costs a run that does not use it
nothing but its own small module.
"""
