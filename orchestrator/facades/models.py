"""/model's port: the orchestrator's provider chain and each coding CLI's models
(instincts ``Models``)."""

from __future__ import annotations

from harnesses.base import HarnessRegistry
from identity.pack import Pack
from instincts.contract import ModelOption
from orchestrator.providers.chain import ProviderChain

ORCHESTRATOR = "orchestrator"


class ModelsFacade:
    def __init__(
        self, chain: ProviderChain, registry: HarnessRegistry, pack: Pack, configured: str | None
    ) -> None:
        self._chain = chain
        self._registry = registry
        self._pack = pack
        self._configured = configured  # harness.model: every CLI's, when set

    def families(self) -> list[str]:
        return [h.name for h in self._registry.all() if h.provider is not None]

    def options(self) -> list[ModelOption]:
        found = [
            ModelOption(ORCHESTRATOR, self._chain.model_of(e), e.name)
            for e in self._chain.endpoints
        ]
        for harness in self._registry.all():
            if harness.provider is None:
                continue  # no model (the demo harness)
            names = [self._configured] if self._configured else []
            names += list(harness.models)
            # Models the pack's members name for this CLI (identity/pack.py).
            members = self._pack.agents.values()
            names += [a.model for a in members if a.harness == harness.name and a.model]
            for name in dict.fromkeys(names):
                found.append(ModelOption(harness.name, name))
        return found
