"""The wmtsim dashboard: a multipage Streamlit app (``wmtsim dashboard``).

Layers: `services` calls the library (cached), `charts` turns frames into Altair charts,
`pages/` lays out the controls. ``app.py`` only declares the pages.
"""
