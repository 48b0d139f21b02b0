"""Small pure helpers every layer may use: argument checks, markup escaping, time wording, token
counters, the immutable items map and the quick ``__init__`` of frozen records."""
