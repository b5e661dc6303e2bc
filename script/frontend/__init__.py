"""The frontend: a type-annotated Python function (and the modules, classes and globals it reads)
-> an SSA ``ir.Graph``.

``compiler`` holds the driver (``compile_function``, ``FunctionCompiler``) and imports one mixin
module per construct family (``exprs``, ``calls``, ``stmts``, ``iter``, ``containers``,
``globals``, ``modules``, ``objects``), none of which imports it back. ``definition`` holds the
result (``FunctionDef``) and source loading, ``env`` the scopes; ``annotations``, ``classes``,
``signature`` and ``infer_types`` map Python annotations, classes and values to IR types. Nothing
here runs compiled code.
"""
