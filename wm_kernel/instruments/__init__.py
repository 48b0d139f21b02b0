"""Instruments that observe a session: the per-turn history and the prompt diff."""
