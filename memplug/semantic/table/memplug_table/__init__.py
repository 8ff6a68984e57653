"""Data only: the builtin semantic provider's table (``data/``), read by
``memplug.semantic.builtin``; its provenance and licence are in ``data/NOTICE``."""
