"""Streamlit glue shared by the pages: caches, the sidebar and the shareable URL (the server's
runtime, drawing nothing, is in server/)."""
