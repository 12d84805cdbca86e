"""Process-pool side of streamwrite: synchronous, storage-free numpy kernels.

Importing this package never imports anyio or the async shell.
"""
