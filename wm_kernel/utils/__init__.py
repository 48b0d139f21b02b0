"""Small pure helpers every layer may use: argument checks, markup escaping, time wording,
the immutable items map and the quick ``__init__`` of frozen records."""
