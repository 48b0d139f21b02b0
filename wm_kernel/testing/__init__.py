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

This package imports nothing on its own (its public names load lazily, PEP 562), so the pytest
plugin costs a run that does not use it nothing but its own small module:
``from wm_kernel.testing import check_stability, assert_stable``.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "check_stability": "wm_kernel.testing.stability",
    "check_log": "wm_kernel.testing.logcheck",
    "PromptSnapshot": "wm_kernel.testing.snapshot",
    **{
        name: "wm_kernel.testing.assertions"
        for name in (
            "assert_section_present",
            "assert_placement_under",
            "assert_cached_prefix_stable",
            "assert_hit_rate",
            "assert_no_markup_escape",
            "assert_stable",
            "prompts_of",
            "placement_text",
        )
    },
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'wm_kernel.testing' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(__all__)
