"""The live class as its own domain, with no Streamlit in it: what a class learned in the
concept check (check_map.py). The pages and the class bar draw it; lessons never import it."""
