"""Wire dialects: one module per way a request goes out (Anthropic as the kit lays it out, OpenAI
Chat Completions, OpenAI Responses, Gemini, Bedrock Converse, MIRA's own), each a
``wm_kernel.dialects.base.Dialect`` that builds its request body, lays out its cache, reads its
usage and calls its SDK; the registry every view looks a wire up in
(``wm_kernel.dialects.registry``, which names the built-in wires and reads them when first asked);
and the provider-neutral usage they read (``wm_kernel.dialects.usage``).

The package imports nothing itself: a lookup in the registry finds the built-in wires whichever
module was imported first.
"""
