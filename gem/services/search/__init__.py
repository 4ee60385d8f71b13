"""Search backends behind one HTTP interface, ``POST /retrieve``, that :class:`gem.tools.search_tool.SearchTool` calls.

- ``retrieval_server``: a local corpus (JSONL of ``id``/``title``/``text``) searched with BM25
  (``bm25s``) or dense vectors (``sentence-transformers`` + ``faiss``); ``build_index`` builds the index.
- ``serp_search_server`` / ``google_search_server``: the web, through SerpAPI or Google Custom Search.

All of them speak the Search-R1 request/response format (``service.py``) and batch concurrent
requests into one search. Nothing here is imported by ``import gem``; the heavy libraries come with
``pip install -e ".[search]"`` in the GEM checkout.
"""
