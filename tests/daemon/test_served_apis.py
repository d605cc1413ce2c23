"""ApiVersions advertises the KIP-630/853 RPCs the core serves (issue 10: it advertised none of them)."""

from __future__ import annotations

from kraftd.shell.apis import handlers, table


def test_snapshot_and_voter_rpcs_are_advertised_at_their_full_ranges() -> None:
    served = table.supported_versions()
    assert served[59] == (0, 1)  # FetchSnapshot
    assert served[81] == (0, 0)  # RemoveRaftVoter
    assert served[82] == (0, 0)  # UpdateRaftVoter
    assert {59, 81, 82} <= handlers.CORE_APIS


def test_the_table_is_what_the_node_serves_dispatches_and_authorizes() -> None:
    """issue 23: ApiVersions, the forwardable set, the authorizer's rules and dispatch all read one table."""
    from kraftd.shell.apis.routing import FORWARDED, RequestRouter
    from kwire.authz import UNAUTHORIZED_FREE

    assert table.supported_versions() == {k: a.versions for k, a in table.TABLE.items()}
    assert set(FORWARDED) == {k for k, a in table.TABLE.items() if a.forwarded} and len(FORWARDED) == 20
    assert set(table.RULES) == set(table.TABLE) - UNAUTHORIZED_FREE
    assert table.RULE_BOOK.rule_of(38, forwarded=True).operation == "CREATE_TOKENS"
    assert table.RULE_BOOK.rule_of(38).operation == "ALTER"
    parts = RequestRouter(None).parts  # type: ignore[arg-type]  # binds lazily: no node needed to list parts
    assert {a.part for a in table.TABLE.values()} - set(parts) == {table.Part.VERSIONS}
    assert handlers.CORE_APIS == {1, 52, 53, 54, 59, 80, 81, 82, 650}


def test_not_controller_is_decided_once_from_the_table() -> None:
    """issue 23: a node that is not the active controller answers every leader-only API NOT_CONTROLLER from the
    router (in the API's own shape), before any part runs; the other APIs reach their part."""
    import asyncio
    from types import SimpleNamespace

    from generated.create_topics_request import CreatableTopic, CreateTopicsRequest
    from generated.messages import API_SPECS
    from generated.request_header import RequestHeader
    from kraftd.shell.apis.routing import RequestRouter
    from kwire.headers import encode_response

    security = SimpleNamespace(authorizer_class="x")
    node = SimpleNamespace(controller=SimpleNamespace(machine=SimpleNamespace(active=False)))
    node.config = SimpleNamespace(security=security)
    router = RequestRouter(node)  # type: ignore[arg-type]
    reached: list[int] = []

    async def part(header: RequestHeader, body: object, info: object) -> str:
        reached.append(header.request_api_key)
        return "answered by its part"

    router.parts = dict.fromkeys(router.parts, part)
    router._routes = router.routes()
    assert {19, 20, 37, 44, 57, 58, 62, 63, 64, 67, 70, 73, 30, 31, 49, 51} <= table.LEADER_ONLY
    assert not {1, 52, 55, 60, 32, 29, 650, 651} & table.LEADER_ONLY  # any controller answers these
    for key, api in sorted(table.TABLE.items()):
        if api.part is table.Part.VERSIONS:
            continue  # answered by the listener itself (kwire.server)
        version = api.versions[1]
        header = RequestHeader(request_api_key=key, request_api_version=version, correlation_id=1)
        resp = asyncio.run(router.handle(header, API_SPECS[key].request(), None))  # type: ignore[arg-type]
        if key in table.LEADER_ONLY:
            assert resp != "answered by its part" and encode_response(key, version, 1, resp), key
        else:
            assert resp == "answered by its part"
    assert sorted(reached) == sorted(set(table.TABLE) - table.LEADER_ONLY - {18})
    create = CreateTopicsRequest(topics=[CreatableTopic(name="a"), CreatableTopic(name="b")])
    header = RequestHeader(request_api_key=19, request_api_version=7, correlation_id=1)
    resp = asyncio.run(router.handle(header, create, None))  # type: ignore[arg-type]
    assert [(t.name, t.error_code) for t in resp.topics] == [("a", 41), ("b", 41)]  # NOT_CONTROLLER
    header = RequestHeader(request_api_key=63, request_api_version=4, correlation_id=1)
    assert asyncio.run(router.handle(header, API_SPECS[63].request(), None)).error_code == 41  # type: ignore[arg-type]
