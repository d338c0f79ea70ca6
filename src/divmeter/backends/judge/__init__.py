"""The judge's rating core: texts in, ratings out, through an OpenAI-compatible server.

Templates and few-shot examples (``prompts``), strict parsing (``parse``), ratings from
log-probabilities (``logprobs``), settings (``config``), request bodies (``requests``), sending
them (``ask``), the absolute and pairwise tasks (``run``), results and position bias
(``results``, ``bias``). The workflow around it lives in :mod:`divmeter.studies.judge`.
"""
