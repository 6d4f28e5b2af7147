"""The server process's runtime, drawing nothing: settings, the run queue and the memory
ceiling, the memory budget and the working memory, sessions, upload caps, training runs and
teachers' drafts. The pages and their glue (ui/) use it; it never imports them."""
