"""Entries for other evaluation frameworks (each imports its framework lazily, inside functions).

* :mod:`divmeter.apps.integrations.inspect`: inspect-ai (``pip install 'divmeter[inspect]'``): score
  the epochs of each sample with any divmeter metric.
"""
