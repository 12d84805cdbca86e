"""Pure state machines of the write path (sans-I/O): they return bytes, never touch files."""
