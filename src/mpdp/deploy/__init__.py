"""Deployment: every party of a learning algorithm in its own OS process, over gRPC with mutual TLS.

Above :mod:`mpdp.learning` and below :mod:`mpdp.cli`. What an algorithm's parties are and do is its own
(:class:`~mpdp.learning.spec.deployment.AlgorithmDeployment`, named by its spec); this package runs them apart:

* :mod:`~mpdp.deploy.session`: a party's connections, the configuration handshake, its protocol runs;
* :mod:`~mpdp.deploy.deployments`: finds an algorithm's deployment through its spec;
* :mod:`~mpdp.deploy.party`: ``mpdp party --config`` for an ``"algorithm"``;
* :mod:`~mpdp.deploy.launcher`: ``mpdp launch``, every party as a process on this machine;
* :mod:`~mpdp.deploy.engine`: the one interface of that launcher and Flower's (:mod:`mpdp.flower.launcher`):
  ``launch(spec, config, options)`` returns the report the deployment assembles, the same on every engine.

A party's data file and the public schema are :mod:`mpdp.datasets.holdings`; the LAN/WAN wall-time model of
``--network`` is :mod:`mpdp.runtime.network`.
"""
