"""Op declarations. Importing this package registers every op in ``ir.registry.REGISTRY``."""

from ir.ops import creation, elementwise, linalg, nn, prim, reductions, shape  # noqa: F401
from ir.ops import autodiff_ops, script_prim  # noqa: F401
