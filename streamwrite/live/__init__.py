"""Live files: the async shell over ``layout.appender`` and the snapshots a live file holds."""
