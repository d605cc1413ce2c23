"""The controller listener's SASL credentials and ACLs, read from the node's committed metadata image.

Contracts:
1. :class:`ImageCredentials` is a kwire.sasl CredentialStore. SCRAM-SHA-256/512: the image's
   UserScramCredentialRecord for (user, mechanism) (salt, stored key, server key, iterations, as
   AlterUserScramCredentials wrote them) is used when present, as Kafka's controller authenticates SCRAM from its
   metadata image; when the image has none for that user, the user of the listener's JAAS entry
   (``user_<name>="<password>"``) is accepted, so controllers can log in to each other before any credential is
   stored. PLAIN always uses the JAAS entry (Kafka's PlainServerCallbackHandler reads only JAAS).
2. The image read is always the *committed* one (records replayed after commit), never the leader's uncommitted
   view: a credential or ACL takes effect once its record is committed, and is gone once its removal is.
3. :class:`ImageAcls` turns the image's AccessControlEntryRecords into kwire.authz AclEntry values (Kafka's names
   for the byte codes), re-reading them whenever the image's applied offset moves; kwire.authz evaluates them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from kraftd.controller import acls as acl_codes
from kraftd.controller.image import MetadataImage
from kraftd.shell.apis.table import RULE_BOOK
from kraftd.shell.controller.glue import ControllerPort
from kwire.authz import AclAuthorizer, AclEntry
from kwire.sasl import JaasCredentials, SaslServerConfig, ScramCredential

SCRAM_CODES = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}

ImageSource = Callable[[], MetadataImage]


class ImageCredentials:
    """Contract 1."""

    def __init__(self, jaas: JaasCredentials, image: ImageSource) -> None:
        self.jaas = jaas
        self.image = image

    def plain_password(self, user: str) -> str | None:
        return self.jaas.plain_password(user)

    def scram(self, mechanism: str, user: str) -> ScramCredential | None:
        code = SCRAM_CODES.get(mechanism)
        if code is None:
            return None
        record = self.image().scram.get((user, code))
        if record is not None:
            return ScramCredential(
                bytes(record.salt), bytes(record.stored_key), bytes(record.server_key), record.iterations
            )
        return self.jaas.scram(mechanism, user)


def _name(names: tuple[str, ...], code: int) -> str:
    return names[code] if 0 <= code < len(names) else "UNKNOWN"


def acl_entry(record: Any) -> AclEntry:
    """One AccessControlEntryRecord with Kafka's names (unknown codes become UNKNOWN, which match nothing)."""
    return AclEntry(
        resource_type=_name(acl_codes.RESOURCE_TYPES, record.resource_type),
        resource_name=record.resource_name,
        pattern_type=_name(acl_codes.PATTERN_TYPES, record.pattern_type),
        principal=record.principal,
        host=record.host,
        operation=_name(acl_codes.OPERATIONS, record.operation),
        allow=_name(acl_codes.PERMISSIONS, record.permission_type) == "ALLOW",
    )


class ImageAcls:
    """Contract 3: a kwire.authz AclSource over the committed image."""

    def __init__(self, image: ImageSource) -> None:
        self.image = image
        self._seen: tuple[int, int] | None = None
        self._entries: tuple[AclEntry, ...] = ()

    def __call__(self) -> tuple[AclEntry, ...]:
        image = self.image()
        key = (id(image), image.offset)
        if key != self._seen:
            self._entries = tuple(acl_entry(r) for r in image.acls.values())
            self._seen = key
        return self._entries


def listener_security(
    node: ControllerPort, sasl: SaslServerConfig | None
) -> tuple[SaslServerConfig | None, AclAuthorizer | None]:
    """The node's listener SASL settings with :class:`ImageCredentials`, and its authorizer over
    :class:`ImageAcls` (None without ``authorizer.class.name``)."""

    def committed() -> MetadataImage:
        image: MetadataImage = node.controller.machine.committed
        return image

    if sasl is not None and isinstance(sasl.credentials, JaasCredentials):
        sasl = replace(sasl, credentials=ImageCredentials(sasl.credentials, committed))
    sec = node.config.security
    if not sec.authorizer_class:
        return sasl, None
    return sasl, AclAuthorizer(RULE_BOOK, sec.super_users, ImageAcls(committed), sec.allow_if_no_acl)
