from . import layers

__all__ = ["layers"]
