"""Ring 1 state machines (sans-I/O): file writer, live file, table, compaction; they return
bytes or actions and never touch a file."""
