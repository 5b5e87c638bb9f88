"""What Fetch ships besides its code: the identity, the pack, the skills, the price table
and the dashboard's templates and static files. Installed as the package ``fetch_data``
(setup.py maps it to this folder); code finds it through ``orchestrator.shipped``."""
