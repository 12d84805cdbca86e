"""Executors: the inline executor, the process pool, its priority gate and ``__main__`` guard."""
