"""Shared Streamlit helpers for the workbench pages (state, caching). No SQL, no ranking."""
