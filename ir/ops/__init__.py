"""Op declarations. Importing this package registers every op in ``ir.registry.REGISTRY``."""

from ir.ops import (  # noqa: F401
    autodiff_ops,
    containers,
    creation,
    elementwise,
    index_put,
    indexing,
    layout,
    linalg,
    nn,
    numpy_ops,
    prim,
    random,
    reductions,
    script_prim,
    shape,
    strings,
)
