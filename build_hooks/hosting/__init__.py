"""What the host serves beside the pages: each page's CSP, the host header files, precompressed copies,
the service worker.
"""
