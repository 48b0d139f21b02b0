"""Wire dialects: one module per way a request goes out (Anthropic as the kit lays it out, OpenAI
Chat Completions, OpenAI Responses, Gemini, MIRA's own), each registered in
``wm_kernel.dialects.registry``, which every view looks a wire up in; and the provider-neutral
usage they read (``wm_kernel.dialects.usage``).

Importing the package registers every built-in dialect (the modules below), so a lookup in the
registry always finds them.
"""

from __future__ import annotations

from wm_kernel.dialects import anthropic as _anthropic  # noqa: F401  (each registers its dialect)
from wm_kernel.dialects import bedrock as _bedrock  # noqa: F401
from wm_kernel.dialects import gemini as _gemini  # noqa: F401
from wm_kernel.dialects import mira as _mira  # noqa: F401
from wm_kernel.dialects import openai_chat as _openai_chat  # noqa: F401
from wm_kernel.dialects import openai_responses as _openai_responses  # noqa: F401
