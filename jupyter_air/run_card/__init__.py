"""The run card: a call's live status, metrics, ranks and Stop button in the cell that runs it."""
