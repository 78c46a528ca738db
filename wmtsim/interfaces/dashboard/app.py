"""Entry point of the wmtsim dashboard: declares the pages, nothing else.

Run with ``wmtsim dashboard`` (or ``streamlit run wmtsim/interfaces/dashboard/app.py``).
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

# The page scripts live in views/, not pages/: a pages/ folder next to the entry point
# switches Streamlit to its legacy auto-discovered navigation on deep links (/compare).
PAGES = Path(__file__).resolve().parent / "views"

st.set_page_config(page_title="wmtsim dashboard", layout="wide")
page = st.navigation([
    st.Page(PAGES / "dynamics.py", title="Poisoning dynamics", url_path="dynamics",
            default=True),
    st.Page(PAGES / "population.py", title="Population dynamics", url_path="population"),
    st.Page(PAGES / "compare.py", title="Compare configurations", url_path="compare"),
    st.Page(PAGES / "sweep.py", title="Sweep explorer", url_path="sweep"),
    st.Page(PAGES / "trace.py", title="Trace replay", url_path="trace"),
    st.Page(PAGES / "why.py", title="Why (attribution, claims)", url_path="why"),
    st.Page(PAGES / "atlas.py", title="Screening atlas", url_path="atlas"),
    st.Page(PAGES / "attack.py", title="The strongest attacker", url_path="attack"),
])
page.run()
