"""The boundary: the one place host code touches what a kennel produced, and host git.

A kennel never writes where the host reads. Each run works on its own layer over the
repository (``layer.py``); what comes back is data (``changeset.py``), read without
following anything and within bounds (``walk.py``), then turned into a git tree by the
hardened host git (``gitops.py``, ``gitconfig.py``, ``gittree.py``). The owner's working
tree is written only after an approval, from git objects, by git's own checked paths.
``tests/unit/test_boundary_only.py`` enforces that no other module touches a kennel's
folders.
"""
