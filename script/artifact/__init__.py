"""Artifacts: ``freeze`` (a module with its weights folded in), ``serialize`` (``save``/``load``)
and ``archive`` (the ``.rns`` file format)."""
