"""Figure builders: arrays and token lists in, `plotly.graph_objects.Figure` out.

No Streamlit, no file I/O, no model calls, so every figure works in a notebook too.
Rows of every attention matrix are queries, columns are keys.
"""
