"""Local files: durable writes (fsync, rename, directory fsync), locks, segment moves."""
