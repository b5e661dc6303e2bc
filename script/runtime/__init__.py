"""The runtime: the executor path every entry walks (functions, modules, gradients).

A call's arguments select a specialization (``function``); a miss clones the frontend's graph,
inlines, specializes it to the argument types, runs the pass pipeline (``pipelines``) and generates
Python code for it (``codegen``, with ``slot_writes``, ``allocator`` and the debug-mode
``sanitize``). ``script_module`` runs ``Module`` methods, ``autodiff`` the forward/backward pairs.
Tools watch it through ``instrument``; the runtime never imports them.
"""
