"""kraftd.controller.controller_registration: the one place a RegisterControllerRecord is built (issue 23)."""

from __future__ import annotations

import uuid

from immutables import Map

from generated.controller_registration_request import ControllerRegistrationRequest, Feature, Listener
from kraftd.controller.controller_registration import register_controller
from kraftd.controller.features import MV_CONTROLLER_REGISTRATION
from kraftd.controller.image import MetadataImage
from kwire.errors import ErrorCode

REQ = ControllerRegistrationRequest(
    controller_id=3,
    incarnation_id=uuid.UUID(int=7),
    zk_migration_ready=False,
    listeners=[Listener(name="CONTROLLER", host="h3", port=9093, security_protocol=0)],
    features=[Feature(name="kraft.version", min_supported_version=0, max_supported_version=1)],
)


def test_refused_below_its_metadata_version_and_nothing_written() -> None:
    old = MetadataImage(features=Map({"metadata.version": MV_CONTROLLER_REGISTRATION - 1}))
    assert register_controller(old, REQ) == ([], ErrorCode.UNSUPPORTED_VERSION)


def test_one_record_carrying_the_request_as_sent() -> None:
    image = MetadataImage(features=Map({"metadata.version": MV_CONTROLLER_REGISTRATION}))
    (record,), error = register_controller(image, REQ)
    assert error == ErrorCode.NONE
    assert (record.controller_id, record.incarnation_id) == (3, uuid.UUID(int=7))
    assert [(e.name, e.host, e.port, e.security_protocol) for e in record.end_points] == [
        ("CONTROLLER", "h3", 9093, 0)
    ]
    assert [(f.name, f.min_supported_version, f.max_supported_version) for f in record.features] == [
        ("kraft.version", 0, 1)
    ]
