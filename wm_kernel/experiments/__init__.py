"""Prompt experiments: scripted scenarios, recording and replay, variants side by side.

A :class:`Scenario` is a script of what happens to a Session: base prompt changes, feeds to named
trinkets, turns, segment collapses, clock moves, profile changes and explicit composes. It is saved
as a JSON Lines file, can be recorded from a live Session (:func:`record`) and replayed into
a fresh one (:meth:`Scenario.run`), which composes exactly the prompts the recorded session did.
:func:`compare` replays one scenario under several :class:`Variant` s (a layout, a trinket switched
off, another base prompt or wording) and returns one DataFrame keyed by variant and turn; given many
scenarios and an executor (a process pool, a Dask cluster) it runs the replays in parallel and
returns the serial run's frame, keyed by scenario, variant and turn.

The package, one concern per module:

=================  ===============================================================================
``codec``          feed arguments as JSON (``$`` tags for datetimes, tuples...)
``steps``          one typed class per kind of step: parse, validate, serialise, apply
``scenario``       the file format's header, :class:`Scenario`, atomic saving
``recorder``       :func:`record`, :class:`ScenarioRecorder`: a live Session's feeds made a Scenario
``variants``       :class:`Variant`, validated in one place
``compare``        :func:`compare`, :func:`run_variants`, :func:`tabulate`, :func:`plot_compare`
``sweep``          running replays on an executor in order; :class:`SweepError` for failures
``progress``       a progress bar on the terminal, a widget in a notebook
``cli``            ``python -m wm_kernel replay``
=================  ===============================================================================

Examples
--------
>>> sc = Scenario(base_prompt="You help {first_name}.", profile={"first_name": "Ada"},
...               clock="2026-11-30T09:00:00+00:00", trinkets=["PeanutGalleryTrinket"])
>>> _ = sc.compose().feed("PeanutGalleryTrinket", "add_guidance", "concern", "Slow down.", ttl=1)
>>> _ = sc.advance_turn(3)
>>> session = sc.run()
>>> session.turn, session.composed["notification_center"] == ""
(3, True)
>>> print(sc.dumps().splitlines()[2])
{"step": "feed", "trinket": "PeanutGalleryTrinket", "method": "add_guidance", "args": ["concern", "Slow down."], "kwargs": {"ttl": 1}}
"""  # noqa: E501 - examples show their output line for line

from __future__ import annotations

from wm_kernel.experiments.cli import add_replay_parser, parse_variant_spec, replay_command
from wm_kernel.experiments.codec import decode_value, encode_value
from wm_kernel.experiments.compare import compare, run_variants
from wm_kernel.experiments.progress import TerminalProgress, WidgetProgress
from wm_kernel.experiments.recorder import ScenarioRecorder, record, session_recording
from wm_kernel.experiments.results import COMPARE_COLUMNS, PARTS, VariantRun, part_digest, plot_compare, tabulate
from wm_kernel.experiments.scenario import Scenario
from wm_kernel.experiments.scenario_file import FORMAT, VERSION, profile_fields
from wm_kernel.experiments.steps import STEP_TYPES, ScenarioError, Step
from wm_kernel.experiments.sweep import SweepError, SweepFailure, dask_client
from wm_kernel.experiments.variants import BUILTIN_LAYOUTS, Variant, as_variant
from wm_kernel.utils.safe_files import atomic_write_text as atomic_write

__all__ = [
    "BUILTIN_LAYOUTS",
    "COMPARE_COLUMNS",
    "FORMAT",
    "PARTS",
    "STEP_TYPES",
    "VERSION",
    "Scenario",
    "ScenarioError",
    "ScenarioRecorder",
    "Step",
    "SweepError",
    "SweepFailure",
    "TerminalProgress",
    "Variant",
    "VariantRun",
    "WidgetProgress",
    "add_replay_parser",
    "as_variant",
    "atomic_write",
    "compare",
    "dask_client",
    "decode_value",
    "encode_value",
    "parse_variant_spec",
    "part_digest",
    "plot_compare",
    "record",
    "profile_fields",
    "replay_command",
    "run_variants",
    "session_recording",
    "tabulate",
]
