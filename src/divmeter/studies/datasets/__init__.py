"""Benchmark data a user can fetch: the registry of known data sets and the fetcher.

``divmeter data`` (list, fetch, path, verify) is this module on the command line. Each data set
is one entry of ``manifests.json`` beside this file (adding a data set is adding an entry): a
title, the citation, where it comes from, the URL template of its raw files at a pinned commit,
and for every file its path, size and SHA-256. :func:`fetch` downloads the files (or copies
them from a local folder, ``--from DIR``, on a machine without internet) into a temporary
folder inside the cache, checks each one's size and hash, and only then renames the folder
into place: an interrupted or corrupted fetch leaves nothing half-written, and a hash mismatch
is one line naming the file. A second fetch is answered from the cache after checking it.

The data live in ``$DIVMETER_CACHE/data/NAME`` (default ``~/.cache/divmeter/data/NAME``, the
cache of :mod:`divmeter.backends.cache`), each file under its path in the source repository
without the entry's ``strip`` prefix (Tevet: ``conTest/con_test_200_with_hds_prompt_gen.csv``).
"""

from divmeter.studies.datasets.fetch import *  # noqa: F403 (its __all__ is the API)
from divmeter.studies.datasets.fetch import __all__ as __all__
