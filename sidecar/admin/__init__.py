"""The admin web page: server-rendered HTML on the metrics HTTP port (``/``).

``site`` routes a request to one page module (memories, search, memory, injections, settings,
vault); ``session`` handles login, cookies and CSRF; ``html`` escapes and lays out. Pages call
the domain services the App built; nothing here runs on the gRPC threads.
"""
