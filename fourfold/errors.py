"""Errors that reach a user as a clear message (CLI exit code 2, MCP error), never a traceback."""


class FourfoldError(Exception):
    """Base class: the message is written for the person or agent that asked."""


class IndexBusyError(FourfoldError):
    pass


class NotIndexedError(FourfoldError):
    pass


class StoreUnavailable(FourfoldError):
    """The index's server cannot be reached now (down, restarting, the connection lost);
    asking again later may work."""


class IndexDamagedError(FourfoldError):
    """The index database cannot be read; `fourfold index --rebuild` makes a new one."""


class IndexWriteError(FourfoldError):
    """The index could not be written (disk full); what was committed before stays."""


class QueryError(FourfoldError):
    """Empty query, malformed regex, unknown option value."""


class ModalityUnavailable(FourfoldError):
    """One modality cannot answer (e.g. its model is missing); the others still do."""
