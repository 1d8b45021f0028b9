"""The admin web page: server-rendered HTML on the metrics HTTP port (``/``).

``site`` routes a request to one page module of ``pages`` (``<page>_page``: home, memories,
memory, search, injections, settings, vault, login); ``handler`` carries it over HTTP;
``session`` handles login, cookies and the CSRF check (``csrf``: stateless tokens); ``html``
escapes and lays out. Pages call the domain services the App built; nothing here runs on the
gRPC threads.
"""
