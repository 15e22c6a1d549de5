"""The workbench's shared state: which workspace is open, and its cached MemoryIndex."""

from __future__ import annotations

import os
from pathlib import Path

import streamlit as st

from memory_core import MemoryIndex

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "examples" / "demo-workspace"


@st.cache_resource(show_spinner="Opening the index…")
def _open(workspace: str, profile: str) -> MemoryIndex:
    idx = MemoryIndex.open(workspace, profile=profile)
    idx.ensure_synced()
    return idx


def workspace_picker() -> MemoryIndex:
    """Sidebar: choose the workspace and profile; returns the open (synced) index."""
    default = os.environ.get("MEMORY_WORKBENCH_WORKSPACE", str(DEMO))
    ws = st.sidebar.text_input("Workspace", value=st.session_state.get("workspace", default))
    profile = st.sidebar.selectbox("Profile", ["default", "reference"],
                                   index=["default", "reference"].index(
                                       st.session_state.get("profile", "default")))
    st.session_state["workspace"] = ws
    st.session_state["profile"] = profile
    return _open(ws, profile)


def current_index() -> MemoryIndex:
    return _open(st.session_state.get("workspace", str(DEMO)),
                 st.session_state.get("profile", "default"))
