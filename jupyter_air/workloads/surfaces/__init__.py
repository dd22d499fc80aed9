"""The jobs and schedules as the routes, the panel and the team's service show them."""
