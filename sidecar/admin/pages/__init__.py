"""One module per page of the admin site, named ``<page>_page``; ``sidecar.admin.site`` routes
requests to them."""
