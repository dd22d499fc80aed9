"""The Jupyter server extension: its configuration and start-up (``extension``), its REST handlers and routes,
its background tasks, and how its terminals start (``terminals``)."""
