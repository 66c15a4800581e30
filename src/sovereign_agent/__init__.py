"""Support the book does not print: the package of the runtime the book builds."""
