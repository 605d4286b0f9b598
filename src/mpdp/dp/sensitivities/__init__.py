"""Named, tested sensitivity functions: one module per family (e.g. ``functional_mechanism``, ``erm``).

Model code never writes a sensitivity formula inline; it calls a function from here, whose docstring
states the assumptions (feature bounds, norms, loss Lipschitz constants) and cites the paper section.
"""
