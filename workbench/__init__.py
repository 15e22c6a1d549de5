"""The Streamlit workbench's logic, beside its views in ``pages/``: state, caching, tables,
figures. No SQL, no ranking: memory_core decides, this package lays its answers out."""
