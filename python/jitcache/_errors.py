"""The exceptions jitcache raises (the extension raises these classes)."""


class Error(Exception):
    """A jitcache failure.

    code: what kind ("compile_failed", "load_failed", "runtime_error", "runtime_missing",
    "no_device", "unsupported", "invalid_argument", "io_error", ...), as jitcache::ErrorCode.
    message: one line naming what failed. log: the compiler's build log (compile_failed), else "".
    str() is the message followed by the build log, if any.
    """

    def __init__(self, message, code="runtime_error", log=""):
        super().__init__(message, code, log)
        self.message = message
        self.code = code
        self.log = log

    def __str__(self):
        return self.message + ("\n" + self.log if self.log else "")


class ArgumentError(Error, ValueError):
    """Bad input from the caller (code "invalid_argument"): an empty source, a bad option."""
