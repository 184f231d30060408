"""The built-in layers: one module per layer, each defining ``LAYER`` from its statistics and
output (`derivations.Layer`), with the forms its papers and libraries state, to be proved.

`derivations.catalog.DEFINITIONS` lists them, in the order they print; a module is imported
when its layer is first looked up.  A layer here imports only the core types, the machinery
that builds it and the layers it is built on: never claims, codegen, numeric or figures
(tests/test_layout.py)."""
