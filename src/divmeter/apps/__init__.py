"""Layer 7, front ends: the command line (``cli/``), the annotation web app (``web/``) and the
inspect-ai integration (``integrations/``): parse, call the library, format."""
