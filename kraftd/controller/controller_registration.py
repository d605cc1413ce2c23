"""KIP-919 controller registration as the active controller decides it (Kafka's
ClusterControlManager.registerController): the RegisterControllerRecord is built here only.

Contracts:
1. Below metadata.version MV_CONTROLLER_REGISTRATION (3.7-IV0) a ControllerRegistration is refused with
   UNSUPPORTED_VERSION and nothing is written.
2. Otherwise the answer is one RegisterControllerRecord carrying the request's incarnation id, listeners and
   supported feature ranges as sent; registering again replaces the controller's entry.
"""

from __future__ import annotations

from typing import Any

from generated.controller_registration_request import ControllerRegistrationRequest
from generated.register_controller_record import (
    ControllerEndpoint,
    ControllerFeature,
    RegisterControllerRecord,
)
from kraftd.controller.features import MV_CONTROLLER_REGISTRATION
from kraftd.controller.image import MetadataImage
from kwire.errors import ErrorCode


def register_controller(
    image: MetadataImage, req: ControllerRegistrationRequest
) -> tuple[list[Any], ErrorCode]:
    """Contracts 1-2: (records, error)."""
    if image.metadata_version < MV_CONTROLLER_REGISTRATION:
        return [], ErrorCode.UNSUPPORTED_VERSION
    record = RegisterControllerRecord(
        controller_id=req.controller_id,
        incarnation_id=req.incarnation_id,
        zk_migration_ready=req.zk_migration_ready,
        end_points=[
            ControllerEndpoint(name=e.name, host=e.host, port=e.port, security_protocol=e.security_protocol)
            for e in req.listeners
        ],
        features=[
            ControllerFeature(
                name=f.name,
                min_supported_version=f.min_supported_version,
                max_supported_version=f.max_supported_version,
            )
            for f in req.features
        ],
    )
    return [record], ErrorCode.NONE
