"""Lessons: the lesson file format, the facts a lesson states (computed from the model, never
typed), and the lessons that ship with the app (teaching/bundled/*.toml)."""
