"""ApiVersions (api key 18): the server's response and the client's negotiation.

Public API:
- ``controller_apis(listener="controller") -> dict[api_key, (min, max)]`` — what a node serves on a listener.
- ``build_api_versions_response(request_version, served, *, supported_features, finalized_features,
  finalized_features_epoch) -> ApiVersionsResponse``
- ``unsupported_version_response(served) -> ApiVersionsResponse`` — the v0 error reply (encode it at v0).
- ``valid_client_software(name_or_version) -> bool``
- ``negotiate(ours, response) -> NegotiatedVersions`` with ``.version_for(api_key)`` (ApiNotSupportedError).

Contracts (PROTOCOL-FACTS §2.2, §9 items 2-3; Kafka ApiVersionsResponse, ApiVersionsRequest, NodeApiVersions):
1. ApiKeys lists exactly the APIs served on that listener with their (min, max), ascending by api key.
2. SupportedFeatures defaults to {"kraft.version": 0-1}. For request versions < 4 every supported feature whose
   min version is 0 is left out (KAFKA-17011/17492: older clients reject a 0 minimum). Finalized features and
   their epoch come from the caller (the node's current metadata); they are sent as given.
3. An unsupported ApiVersions request version gets ErrorCode UNSUPPORTED_VERSION with ApiKeys holding only
   ApiVersions' own range, written at v0 with response header v0.
4. ClientSoftwareName/Version (v3+) must match ``[a-zA-Z0-9](?:[a-zA-Z0-9\\-.]*[a-zA-Z0-9])?``; a request
   that fails this gets INVALID_REQUEST (Kafka ApiVersionsRequest.isValid).
5. Negotiation intersects our range with the peer's per API and uses the highest common version; an API the
   peer lacks, or ranges that do not overlap, make ``version_for`` raise ApiNotSupportedError.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from generated.api_versions_response import (
    ApiVersion,
    ApiVersionsResponse,
    FinalizedFeatureKey,
    SupportedFeatureKey,
)
from generated.messages import API_SPECS
from kwire.errors import ApiNotSupportedError, ErrorCode

API_VERSIONS_KEY = 18
KRAFT_VERSION_FEATURE = "kraft.version"
DEFAULT_SUPPORTED_FEATURES: Mapping[str, tuple[int, int]] = {KRAFT_VERSION_FEATURE: (0, 1)}
VersionRange = tuple[int, int]
_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def controller_apis(listener: str = "controller") -> dict[int, VersionRange]:
    """Every generated API whose spec lists ``listener``, at its full version range."""
    return {
        k: (s.lowest_version, s.highest_version)
        for k, s in sorted(API_SPECS.items())
        if listener in s.listeners
    }


def valid_client_software(value: str) -> bool:
    return _SOFTWARE.fullmatch(value) is not None


def build_api_versions_response(
    request_version: int,
    served: Mapping[int, VersionRange],
    *,
    supported_features: Mapping[str, VersionRange] = DEFAULT_SUPPORTED_FEATURES,
    finalized_features: Mapping[str, VersionRange] | None = None,
    finalized_features_epoch: int = -1,
    error_code: ErrorCode = ErrorCode.NONE,
    throttle_time_ms: int = 0,
) -> ApiVersionsResponse:
    """The response to a supported ApiVersions request. ``finalized_features`` maps name → (min, max level)."""
    features = [
        SupportedFeatureKey(name=name, min_version=lo, max_version=hi)
        for name, (lo, hi) in sorted(supported_features.items())
        if not (request_version < 4 and lo == 0)
    ]
    finalized = [
        FinalizedFeatureKey(name=name, min_version_level=lo, max_version_level=hi)
        for name, (lo, hi) in sorted((finalized_features or {}).items())
    ]
    return ApiVersionsResponse(
        error_code=int(error_code),
        api_keys=[
            ApiVersion(api_key=k, min_version=lo, max_version=hi) for k, (lo, hi) in sorted(served.items())
        ],
        throttle_time_ms=throttle_time_ms,
        supported_features=features,
        finalized_features_epoch=finalized_features_epoch,
        finalized_features=finalized,
    )


def unsupported_version_response(served: Mapping[int, VersionRange]) -> ApiVersionsResponse:
    lo, hi = served.get(API_VERSIONS_KEY, (0, API_SPECS[API_VERSIONS_KEY].highest_version))
    return ApiVersionsResponse(
        error_code=int(ErrorCode.UNSUPPORTED_VERSION),
        api_keys=[ApiVersion(api_key=API_VERSIONS_KEY, min_version=lo, max_version=hi)],
    )


@dataclass(frozen=True, slots=True)
class NegotiatedVersions:
    """Outcome of ApiVersions negotiation with one peer."""

    versions: Mapping[int, int]
    peer: Mapping[int, VersionRange]
    supported_features: Mapping[str, VersionRange] = field(default_factory=dict)
    finalized_features: Mapping[str, VersionRange] = field(default_factory=dict)
    finalized_features_epoch: int = -1

    def supports(self, api_key: int) -> bool:
        return api_key in self.versions

    def version_for(self, api_key: int) -> int:
        v = self.versions.get(api_key)
        if v is None:
            name = API_SPECS[api_key].name if api_key in API_SPECS else str(api_key)
            if api_key in self.peer:
                raise ApiNotSupportedError(
                    f"no {name} version is supported by both sides (peer: {self.peer[api_key]})"
                )
            raise ApiNotSupportedError(f"the peer does not support {name}")
        return v


def negotiate(ours: Mapping[int, VersionRange], response: ApiVersionsResponse) -> NegotiatedVersions:
    peer = {a.api_key: (a.min_version, a.max_version) for a in response.api_keys}
    versions: dict[int, int] = {}
    for key, (lo, hi) in ours.items():
        if key in peer:
            plo, phi = peer[key]
            top = min(hi, phi)
            if top >= max(lo, plo):
                versions[key] = top
    return NegotiatedVersions(
        versions=versions,
        peer=peer,
        supported_features={f.name: (f.min_version, f.max_version) for f in response.supported_features},
        finalized_features={
            f.name: (f.min_version_level, f.max_version_level) for f in response.finalized_features
        },
        finalized_features_epoch=response.finalized_features_epoch,
    )
