"""The five papers' algorithms, composed from protocols, crypto and dp.

One package per paper (``functional_mechanism``, ``ofpa_ofaa``, ``dpvi``, ``distributed_erm``, ``pfds``), each with
its scikit-learn estimators next to its model (:mod:`mpdp.learning.estimator` holds what they share: cloning,
randomness, the budget spent per fit); ``erm`` is the shared regularised-ERM toolkit; ``registry`` lists what
``mpdp run`` and ``mpdp reproduce`` find; ``release`` writes and reads released models (``mpdp run --save``,
``mpdp predict``, ``mpdp synthesize``).
"""
