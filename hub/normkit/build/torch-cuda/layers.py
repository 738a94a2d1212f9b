"""normkit's hub layers, re-exported: the code lives in normkit.integrations.hub (pip install normkit)."""

try:
    from normkit.integrations.hub import *  # noqa: F401,F403 (every layer its __all__ names)
    from normkit.integrations.hub import __all__  # noqa: F401
except ImportError as error:
    raise ImportError("the normkit kernel's layers are normkit.integrations.hub's: pip install normkit") from error
