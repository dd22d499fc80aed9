"""The Jupyter server extension: its configuration and start-up (``extension``), its REST handlers and routes, and
its background tasks."""
