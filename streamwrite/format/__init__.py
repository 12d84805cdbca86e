"""Pure byte layout (sans-I/O): Thrift codec, metadata structs and builders."""
