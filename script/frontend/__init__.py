"""The frontend: a type-annotated Python function (and the modules, classes and globals it reads)
-> an SSA ``ir.Graph``.

``compiler`` holds the driver (``compile_function``, ``FunctionCompiler``); one mixin module per
construct family (``exprs``, ``calls``, ``stmts``, ``iter``, ``containers``, ``globals``,
``modules``, ``classes``) adds its ``visit_X`` methods. ``annotations``, ``signature`` and
``infer_types`` map Python annotations and values to IR types. Nothing here runs compiled code.
"""
