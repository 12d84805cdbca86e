"""Thrift compact protocol: the codec, its per-struct plans and the decoder."""
