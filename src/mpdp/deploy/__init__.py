"""Deployment: every party of a learning algorithm in its own OS process, over gRPC with mutual TLS.

Above :mod:`mpdp.learning` and below :mod:`mpdp.cli`:

* :mod:`~mpdp.datasets.holdings`: a party's own data file and the public schema;
* :mod:`~mpdp.deploy.session`: a party's connections, the configuration handshake, its protocol runs;
* :mod:`~mpdp.deploy.algorithms`: per algorithm, the parties, their public parameters and roles;
* :mod:`~mpdp.deploy.party`: ``mpdp party --config`` for an ``"algorithm"``;
* :mod:`~mpdp.deploy.launcher`: ``mpdp launch``, every party as a process on this machine;
* :mod:`~mpdp.deploy.network`: the LAN/WAN wall-time model of ``--network``.
"""
