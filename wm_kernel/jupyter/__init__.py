"""The Jupyter extension: the magics and the live dashboard."""
