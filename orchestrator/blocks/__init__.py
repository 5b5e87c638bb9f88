"""Memory blocks: short texts always in the orchestrator model's prompt, edited by the
model (``block_update``, tools.py) and by the owner (``/blocks``, the facade in
orchestrator/facades/blocks.py), every change a version that can be reverted.

* ``persona``: how Fetch works with this owner (on top of COLLAR.md, which stays the file
  the owner edits on disk); ``owner``: about the owner (on top of ALPHA.md);
  ``project``: one per repository, the active repo's block is in the prompt.
* Seeded empty; an empty block is not shown to the model (nor is the section when all
  are empty), so a fresh install's prompt is what it was before blocks existed.
* Stored in ``fetch.db`` (migration 8, orchestrator/store/blocks.py); limits in the
  ``blocks`` settings section (settings.py).
"""

from orchestrator.blocks.service import KINDS, Block, BlockError, Blocks
from orchestrator.blocks.settings import BlockSettings

__all__ = ["KINDS", "Block", "BlockError", "BlockSettings", "Blocks"]
