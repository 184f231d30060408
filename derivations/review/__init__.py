"""Reviewing a whole paper: its LaTeX read, its notation, the layer a definition is, the report."""
