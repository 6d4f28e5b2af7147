"""The error every loading path raises, in its own module so that the family files
(decoder_configs.py) and the registry can both raise it without importing each other."""


class ModelLoadError(ValueError):
    """A model could not be loaded; the message says what is wrong and what to do."""
