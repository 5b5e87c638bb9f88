"""``transcription:``: the speech-to-text endpoints, configured like ``model.providers``.

::

    transcription:
      model: whisper-1                 # the default model of every entry
      providers:
        - {name: openai, base_url: https://api.openai.com/v1, api_keys: [sk-a],
           usd_per_minute: 0.006}
        - {name: local, base_url: http://127.0.0.1:8000/v1, model: Systran/faster-whisper-small}

A single endpoint may be given as ``base_url`` / ``api_key`` (or ``FETCH_TRANSCRIPTION_BASE_URL``
and ``FETCH_TRANSCRIPTION_API_KEY``): a chain of one named ``default``. Kept free of the
openai SDK: reading the config must not import it.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from core.settings import StrictSettings
from orchestrator.providers.settings import ProviderEntry, check_chain

HOW_TO_SET = (
    "voice notes need a transcription endpoint: set transcription.base_url in fetch.yaml "
    "(any OpenAI-compatible /audio/transcriptions server) or FETCH_TRANSCRIPTION_BASE_URL"
)


class TranscriptionEntry(ProviderEntry):
    """One endpoint of the chain; transcription is priced by the minute, not by token."""

    usd_per_minute: float = Field(0.0, ge=0, le=100)


class TranscriptionSettings(StrictSettings):
    base_url: str | None = None
    api_key: str | None = None
    model: str = "whisper-1"
    usd_per_minute: float = Field(0.0, ge=0, le=100)  # for base_url's one endpoint
    providers: tuple[TranscriptionEntry, ...] = ()
    language: str | None = None  # an ISO-639-1 hint ("de"); unset: the server guesses
    timeout_seconds: float = Field(60.0, gt=0, le=600)
    # Longer or bigger audio is refused before it is downloaded (25 MB is what the
    # common hosted servers take in one request).
    max_seconds: int = Field(300, ge=1, le=7200)
    max_bytes: int = Field(25 * 1024 * 1024, ge=1024, le=200 * 1024 * 1024)

    @model_validator(mode="after")
    def _one_chain(self) -> TranscriptionSettings:
        try:
            check_chain(self.providers, self.base_url)
        except ValueError as err:  # worded for model.*: say transcription.* instead
            raise ValueError(str(err).replace("model.", "transcription.")) from None
        return self

    @property
    def configured(self) -> bool:
        return bool(self.base_url or self.providers)

    def entries(self) -> tuple[TranscriptionEntry, ...]:
        if self.providers:
            return self.providers
        if self.base_url:
            keys = (self.api_key,) if self.api_key else ()
            return (
                TranscriptionEntry(
                    name="default",
                    base_url=self.base_url,
                    api_keys=keys,
                    usd_per_minute=self.usd_per_minute,
                ),
            )
        return ()
