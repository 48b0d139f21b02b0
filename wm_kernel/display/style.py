"""The theme of the HTML views under the display layer's name; it lives in
:mod:`wm_kernel.utils.style`, since the instruments' reports (diffs) use it too. Kept while the
dashboard modules import it from here."""
from __future__ import annotations

from wm_kernel.utils.style import BORDER as BORDER
from wm_kernel.utils.style import CODE_FONT as CODE_FONT
from wm_kernel.utils.style import ERROR as ERROR
from wm_kernel.utils.style import INFO as INFO
from wm_kernel.utils.style import MUTED as MUTED
from wm_kernel.utils.style import SUCCESS as SUCCESS
from wm_kernel.utils.style import WARN as WARN
