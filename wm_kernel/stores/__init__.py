"""State stores: the key builder, the embedded stores (memory, one SQLite file) and Valkey."""
