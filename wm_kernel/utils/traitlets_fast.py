"""Setting several traits at once, through traitlets' public API, for less than
``hold_trait_notifications``.

A trinket's update sets its content and its time together, and an observer of either reads the
new value of both. ``with obj.hold_trait_notifications(): ...`` gives that, and costs about three
times the two assignments (a context manager, a notification cache with merging, and a second
round of cross-validation and ``set_trait`` for every name at its end). :func:`set_traits` holds
the notifications the way that context manager does, by giving the object an ``notify_change`` of
its own while it assigns (the method traitlets calls for every change), and delivers them through
the class's ``notify_change`` afterwards. Every assignment is a plain attribute assignment: each
value passes its trait type's ``validate`` and the class's cross-validators (``@validate``, run as
each value is set instead of at the end), and every observer (``@observe``, ``observe()``) hears of
each change, in traitlets' order. Nothing here touches traitlets' private names.

The traitlets versions it is tested with are ``TESTED``; pyproject.toml pins the same range and
``tests/utils/test_traitlets_fast.py`` runs it against the installed traitlets.
"""
from __future__ import annotations

from typing import Any

from traitlets import Bunch, HasTraits, Undefined

__all__ = ["TESTED", "set_traits"]

#: The traitlets versions this module (and the trinkets' notifications) were tested with;
#: pyproject.toml pins the same range.
TESTED = ">=5.9,<5.17"


def set_traits(obj: HasTraits, names: tuple[str, ...], *values: Any) -> None:
    """Set the traits ``names`` to ``values`` (one each, in order), then notify of each change in
    the same order, as ``with obj.hold_trait_notifications(): ...`` would: an observer of one sees
    the new value of all; unchanged values stay quiet. A value that fails validation (a
    TraitError, or what a ``@validate`` method raises) leaves every trait as it was, notifies
    nobody, and propagates. Inside ``hold_trait_notifications`` the changes join that context's."""
    if len(names) != len(values):
        raise TypeError(f"set_traits: {len(names)} names and {len(values)} values")
    own = vars(obj)
    outer = own.get("notify_change")  # hold_trait_notifications' own, while one is active
    held: list[Bunch] = []
    own["notify_change"] = held.append
    try:
        for name, value in zip(names, values, strict=True):
            setattr(obj, name, value)
    except BaseException:
        # undo the assignments made (their notifications go to the list, which is dropped)
        for change in reversed(held):
            if change.old is not Undefined:
                setattr(obj, change.name, change.old)
        held.clear()
        raise
    finally:
        if outer is None:
            del own["notify_change"]
        else:
            own["notify_change"] = outer
    notify = obj.notify_change
    for change in held:
        notify(change)
