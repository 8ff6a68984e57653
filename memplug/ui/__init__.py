"""The local viewer, ``memory ui`` (extra ``ui``; docs/ui.md): pages over ``Memory`` to see,
search and correct what memplug remembers, and why the model saw a line."""
