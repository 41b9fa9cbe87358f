"""The memory plan: arena plans and their checker, in place, zero-copy, order, poison, I/O."""
