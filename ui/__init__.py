"""Streamlit glue shared by the pages: settings, caches, the sidebar and the shareable URL."""
