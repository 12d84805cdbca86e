"""Compaction: the policy and the merge that rewrites a partition's segments.

The async shell over ``layout.compaction``.
"""
