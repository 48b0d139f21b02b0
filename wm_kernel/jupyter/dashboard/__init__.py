"""The live dashboard of a Session: the widget (``widget.Dashboard``, also ``wm_kernel.Dashboard``), what it
shows (``model``), its controls, section panels, drawn tabs and parts."""
