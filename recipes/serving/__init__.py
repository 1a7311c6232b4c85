"""Serving: the engines yichui launches (one :class:`~recipes.serving.spec.EngineSpec` per engine and version), their
argument tables (``tables/``, read from each version's own parser by ``dump.py``), the launches built and checked
from them (``engines.py``), the key launcher (``launcher.py``) and the OpenAI-compatible client (``client.py``).

Domain code: imports nothing of ``wizard`` and no step; the deploy, chat, export and evaluate steps stand on it.
"""
