"""Interfaces: the `wmtsim` command line (`cli`) and the Streamlit dashboard (`dashboard`)."""
