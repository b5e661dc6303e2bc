"""Op declarations. Importing this package registers every op in ``ir.registry.REGISTRY``."""

from ir.ops import elementwise, prim  # noqa: F401
