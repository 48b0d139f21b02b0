"""The IPython magics: %wm_session, %compose, %trinket, %turn... (working_memory), and the extra ones
%load_ext wm_kernel loads beside them: %request, %ask, %wm_import, %plan, %wm_check. ``args`` reads what a user
types; ``tables`` holds the tables they show."""
