"""User-facing errors: one line, naming the model, node and tensor."""


class TinyAotError(Exception):
    """A problem in the user's input (model, golden file, options).

    The CLI prints `str(err)` on one line and exits non-zero; no traceback.
    """

    def __init__(self, message, *, model=None, node=None, tensor=None):
        self.message = message
        self.model = model
        self.node = node
        self.tensor = tensor
        super().__init__(self.format())

    def format(self):
        where = []
        if self.model:
            where.append(str(self.model))
        if self.node:
            where.append(f"node '{self.node}'")
        if self.tensor:
            where.append(f"tensor '{self.tensor}'")
        prefix = ": ".join(where)
        return f"{prefix}: {self.message}" if prefix else self.message


class UnsupportedError(TinyAotError):
    """One or more operators tinyaot cannot compile (all listed at once)."""
