"""Exceptions of the library."""


class ModelError(ValueError):
    """A robot description (URDF, closure file) that cannot be turned into a model.

    The message names the file and the link, joint or field at fault.
    """
