"""Views for people: text and HTML renderings, readable tables, theme colours and pictures.

Nothing here imports IPython or ipywidgets; the Jupyter layer registers these views."""
