"""tern as a Harbor installed agent: ``--agent-import-path tern_harbor:Tern``."""

from tern_harbor.agent import Tern

__all__ = ["Tern"]
