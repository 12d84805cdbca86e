"""The ``_pm`` sidecar codec: header, row group blocks, footer chain (spec/002)."""
