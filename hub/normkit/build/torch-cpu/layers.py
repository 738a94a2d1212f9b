"""normkit's hub layers, re-exported: the code lives in normkit.integrations.hub (pip install normkit)."""

try:
    from normkit.integrations.hub import RMSNorm, RMSNormZeroCentered
except ImportError as error:
    raise ImportError("the normkit kernel's layers are normkit.integrations.hub's: pip install normkit") from error

__all__ = ["RMSNorm", "RMSNormZeroCentered"]
