"""Security settings of the controller listener from ``server.properties`` (Kafka's keys).

Contracts:
1. The controller listener's protocol comes from ``listener.security.protocol.map``: PLAINTEXT, SSL,
   SASL_PLAINTEXT or SASL_SSL. SSL and SASL_SSL need TLS settings; SASL_* need ``sasl.enabled.mechanisms``.
2. Every ``ssl.*`` / ``sasl.*`` key is looked up first as ``listener.name.<listener in lower case>.<key>`` and
   then as the bare key, as Kafka resolves listener-prefixed configuration. The same settings serve the
   controller-to-controller client side (``ssl.*`` for the controller listener, as a Kafka controller uses them).
3. Only PEM stores are accepted (``ssl.keystore.type`` / ``ssl.truststore.type`` = PEM); other store types are
   a ConfigError naming the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kwire.authz import parse_super_users
from kwire.errors import KraftError
from kwire.sasl import (
    MECHANISMS,
    JaasCredentials,
    SaslAuthenticationError,
    SaslClientConfig,
    SaslServerConfig,
)
from kwire.tls import CLIENT_AUTH, TlsSettings

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_KEYS = (
    "ssl.keystore.type ssl.keystore.location ssl.keystore.certificate.chain ssl.keystore.key ssl.key.password "
    "ssl.keystore.password ssl.truststore.type ssl.truststore.location ssl.truststore.certificates "
    "ssl.truststore.password ssl.client.auth ssl.endpoint.identification.algorithm ssl.protocol "
    "ssl.enabled.protocols sasl.enabled.mechanisms sasl.mechanism.controller.protocol "
    "connections.max.reauth.ms sasl.jaas.config super.users authorizer.class.name allow.everyone.if.no.acl.found"
).split()


SECURITY_KEYS = frozenset(_KEYS)


def is_security_key(key: str) -> bool:
    """True for the keys this module reads (bare, listener-prefixed, or per-mechanism JAAS)."""
    if key in _KEYS:
        return True
    if key.startswith("listener.name."):
        rest = key.split(".", 3)[-1] if key.count(".") >= 3 else ""
        return rest in _KEYS or rest.endswith(".sasl.jaas.config")
    return False


@dataclass(frozen=True, slots=True)
class ListenerSecurity:
    protocol: str = "PLAINTEXT"
    tls: TlsSettings | None = None
    sasl_mechanisms: tuple[str, ...] = ()
    client_mechanism: str = "GSSAPI"  # sasl.mechanism.controller.protocol (Kafka's default)
    jaas: Mapping[str, str] = field(default_factory=dict)  # mechanism (upper case) -> sasl.jaas.config text
    reauth_ms: int = 0
    authorizer_class: str | None = None  # authorizer.class.name: any value turns authorization on
    super_users: frozenset[str] = frozenset()
    allow_if_no_acl: bool = False  # allow.everyone.if.no.acl.found

    @property
    def uses_tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.protocol.startswith("SASL_")


def listener_security(
    props: Mapping[str, str], listener: str, protocol: str, error: type[KraftError]
) -> ListenerSecurity:
    prefix = f"listener.name.{listener.lower()}."

    def get(key: str, default: str | None = None) -> str | None:
        value = props.get(prefix + key, props.get(key))
        return default if value is None or value.strip() == "" else value

    if protocol not in PROTOCOLS:
        raise error(
            f"listener.security.protocol.map: {listener}:{protocol}; expected one of {', '.join(PROTOCOLS)}"
        )
    tls = None
    if protocol in ("SSL", "SASL_SSL"):
        for key in ("ssl.keystore.type", "ssl.truststore.type"):
            kind = (get(key, "PEM") or "PEM").upper()
            if kind != "PEM":
                raise error(f"{key}: {kind} is not supported; expected PEM")
        client_auth = (get("ssl.client.auth", "none") or "none").lower()
        if client_auth not in CLIENT_AUTH:
            raise error(f"ssl.client.auth: {client_auth!r}; expected one of {', '.join(CLIENT_AUTH)}")
        tls = TlsSettings(
            keystore_location=get("ssl.keystore.location"),
            keystore_certificate_chain=get("ssl.keystore.certificate.chain"),
            keystore_key=get("ssl.keystore.key"),
            key_password=get("ssl.key.password"),
            truststore_location=get("ssl.truststore.location"),
            truststore_certificates=get("ssl.truststore.certificates"),
            client_auth=client_auth,
            endpoint_identification=props.get(
                prefix + "ssl.endpoint.identification.algorithm",
                props.get("ssl.endpoint.identification.algorithm", "https"),
            ).strip(),
        )
        if not tls.has_keystore:
            raise error(
                f"ssl.keystore.location: required for the {protocol} listener {listener}; expected a PEM file "
                f"(or ssl.keystore.certificate.chain with ssl.keystore.key, bare or under {prefix})"
            )
    mechanisms: tuple[str, ...] = ()
    jaas: dict[str, str] = {}
    if protocol.startswith("SASL_"):
        mechanisms = tuple(
            m.strip().upper()
            for m in (get("sasl.enabled.mechanisms", "GSSAPI") or "").split(",")
            if m.strip()
        )
        for mech in mechanisms:
            text = props.get(f"{prefix}{mech.lower()}.sasl.jaas.config") or get("sasl.jaas.config")
            if text:
                jaas[mech] = text
    reauth = get("connections.max.reauth.ms", "0") or "0"
    try:
        reauth_ms = int(reauth)
    except ValueError:
        raise error(f"connections.max.reauth.ms: {reauth!r} is not an integer") from None
    return ListenerSecurity(
        protocol=protocol,
        tls=tls,
        sasl_mechanisms=mechanisms,
        client_mechanism=(get("sasl.mechanism.controller.protocol", "GSSAPI") or "GSSAPI").upper(),
        jaas=jaas,
        reauth_ms=reauth_ms,
        authorizer_class=(props.get("authorizer.class.name") or "").strip() or None,
        super_users=parse_super_users(props.get("super.users")),
        allow_if_no_acl=_flag(props, "allow.everyone.if.no.acl.found", error),
    )


def _flag(props: Mapping[str, str], key: str, error: type[KraftError]) -> bool:
    value = (props.get(key) or "false").strip().lower()
    if value not in ("true", "false"):
        raise error(f"{key}: {value!r}; expected true or false")
    return value == "true"


def client_tls(props: Mapping[str, str], error: type[KraftError]) -> TlsSettings | None:
    """TLS settings of a client configuration (``--command-config``): None unless ``security.protocol`` is SSL
    or SASL_SSL. Keys as for a listener, without the listener prefix."""
    protocol = props.get("security.protocol", "PLAINTEXT").strip().upper()
    if protocol not in PROTOCOLS:
        raise error(f"security.protocol: {protocol!r}; expected one of {', '.join(PROTOCOLS)}")
    if protocol not in ("SSL", "SASL_SSL"):
        return None
    for key in ("ssl.keystore.type", "ssl.truststore.type"):
        kind = props.get(key, "PEM").strip().upper() or "PEM"
        if kind != "PEM":
            raise error(f"{key}: {kind} is not supported; expected PEM")

    def get(key: str) -> str | None:
        value = props.get(key)
        return None if value is None or not value.strip() else value

    return TlsSettings(
        keystore_location=get("ssl.keystore.location"),
        keystore_certificate_chain=get("ssl.keystore.certificate.chain"),
        keystore_key=get("ssl.keystore.key"),
        key_password=get("ssl.key.password"),
        truststore_location=get("ssl.truststore.location"),
        truststore_certificates=get("ssl.truststore.certificates"),
        endpoint_identification=props.get("ssl.endpoint.identification.algorithm", "https").strip(),
    )


def sasl_settings(
    sec: ListenerSecurity, error: type[KraftError]
) -> tuple[SaslServerConfig | None, SaslClientConfig | None]:
    """The listener's SASL server side and the peer-client side (``sasl.mechanism.controller.protocol`` with the
    ``username``/``password`` of that mechanism's JAAS entry); (None, None) without SASL."""
    if not sec.uses_sasl:
        return None, None
    unsupported = [m for m in sec.sasl_mechanisms if m not in MECHANISMS]
    if unsupported or not sec.sasl_mechanisms:
        raise error(
            f"sasl.enabled.mechanisms: {', '.join(unsupported) or 'none'} not supported; "
            f"expected some of {', '.join(MECHANISMS)}"
        )
    try:
        server = SaslServerConfig(sec.sasl_mechanisms, JaasCredentials.from_jaas(sec.jaas), sec.reauth_ms)
        text = sec.jaas.get(sec.client_mechanism)
        if text is None:
            raise error(
                f"sasl.mechanism.controller.protocol: {sec.client_mechanism} has no "
                f"listener.name.<controller listener>.{sec.client_mechanism.lower()}.sasl.jaas.config"
            )
        client = SaslClientConfig.from_jaas(sec.client_mechanism, text)
    except SaslAuthenticationError as exc:
        raise error(str(exc)) from None
    return server, client


def client_sasl(props: Mapping[str, str], error: type[KraftError]) -> SaslClientConfig | None:
    """SASL settings of a client configuration: ``sasl.mechanism`` (Kafka's default GSSAPI is not supported)
    with ``sasl.jaas.config``; None unless ``security.protocol`` is SASL_PLAINTEXT or SASL_SSL."""
    protocol = props.get("security.protocol", "PLAINTEXT").strip().upper()
    if not protocol.startswith("SASL_"):
        return None
    mechanism = props.get("sasl.mechanism", "GSSAPI").strip().upper()
    if mechanism not in MECHANISMS:
        raise error(f"sasl.mechanism: {mechanism} is not supported; expected one of {', '.join(MECHANISMS)}")
    text = props.get("sasl.jaas.config")
    if not text:
        raise error(
            "sasl.jaas.config: required for SASL; expected '<LoginModule> required username=.. password=..;'"
        )
    try:
        return SaslClientConfig.from_jaas(mechanism, text)
    except SaslAuthenticationError as exc:
        raise error(str(exc)) from None
