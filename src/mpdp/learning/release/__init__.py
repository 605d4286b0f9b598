"""Released models as files: ``mpdp run --save``, ``mpdp predict`` and ``mpdp synthesize``.

* :mod:`~mpdp.learning.release.format`: the versioned, checksummed JSON file and its strict reader
  (:func:`~mpdp.learning.release.format.read_model`, the one function that reads a model file);
* :mod:`~mpdp.learning.release.schema`: the table schema a model carries; reading a CSV in it, writing one;
* :mod:`~mpdp.learning.release.kinds`: what each kind of release holds (linear, mixture, records) and can do;
* :mod:`~mpdp.learning.release.mixture`: paper 002's mixture as plain data, and sampling from it;
* :mod:`~mpdp.learning.release.build`: the released model of an ``mpdp run`` (per algorithm).

Only what a run released goes into the file (parameters after noise, the public schema, the privacy spent);
predicting and synthesising from it are post-processing and spend no budget.
"""
