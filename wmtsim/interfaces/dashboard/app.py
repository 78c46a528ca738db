"""Entry point of the wmtsim dashboard: declares the pages, nothing else.

Run with ``wmtsim dashboard``, or ``streamlit run dashboards/app.py`` from a clone (that
file is a link to this one, the copy the package ships). Every page is reachable by its own
URL path (``/dynamics``, ``/compare``, ...); the root ``/`` opens the Poisoning dynamics
page at ``/dynamics``.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

# The page scripts live in views/, not pages/: a pages/ folder next to the entry point
# switches Streamlit to its legacy auto-discovered navigation on deep links (/compare).
PAGES = Path(__file__).resolve().parent / "views"

st.set_page_config(page_title="wmtsim dashboard", layout="wide")
dynamics = st.Page(PAGES / "dynamics.py", title="Poisoning dynamics", url_path="dynamics")


def _start() -> None:
    # Streamlit serves the default page at "/" only, never at its own url_path, so the
    # default is this hidden page, which opens the Dynamics page at /dynamics.
    st.switch_page(dynamics)


page = st.navigation([
    st.Page(_start, title="Start", url_path="start", default=True, visibility="hidden"),
    dynamics,
    st.Page(PAGES / "population.py", title="Population dynamics", url_path="population"),
    st.Page(PAGES / "compare.py", title="Compare configurations", url_path="compare"),
    st.Page(PAGES / "sweep.py", title="Sweep explorer", url_path="sweep"),
    st.Page(PAGES / "trace.py", title="Trace replay", url_path="trace"),
    st.Page(PAGES / "why.py", title="Why (attribution, claims)", url_path="why"),
    st.Page(PAGES / "atlas.py", title="Screening atlas", url_path="atlas"),
    st.Page(PAGES / "attack.py", title="The strongest attacker", url_path="attack"),
    st.Page(PAGES / "stub_fit.py", title="Stubs fitted to a log", url_path="stubs"),
])
page.run()
