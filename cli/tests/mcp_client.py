"""Drives `pond mcp` with the official MCP Python SDK (PyPI `mcp`) over stdio, as an agent's
client would: initialize, list tools and resources, call pond_search and pond_get (a hit's
session, and an unknown one for an error result), read both resources, then the same through
the SDK's high-level Client in its default (auto) mode. Prints one PASS/FAIL line per check and
`N passed, M failed`; exits 1 when anything failed.

Usage: python mcp_client.py POND_BINARY DATA_DIR QUERY
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

results = []


def check(name, ok, detail=""):
    results.append(ok)
    print(("PASS " if ok else "FAIL ") + name + ("" if ok else f": {detail}"), flush=True)


def attr(obj, *names):
    """A field under its snake_case or camelCase name (the SDK's models have used both)."""
    for n in names:
        if hasattr(obj, n):
            return getattr(obj, n)
    return None


def structured(result):
    s = attr(result, "structured_content", "structuredContent")
    if s is None:
        for c in attr(result, "content") or []:
            text = attr(c, "text")
            if text:
                return json.loads(text)
    return s


async def legacy(params, query):
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            version = attr(init, "protocol_version", "protocolVersion")
            info = attr(init, "server_info", "serverInfo")
            check(f"initialize [protocol={version}]", attr(info, "name") == "pond", init)

            tools = await session.list_tools()
            names = sorted(t.name for t in tools.tools)
            check("tools/list names pond_search and pond_get only", names == ["pond_get", "pond_search"], names)
            for t in tools.tools:
                schema = attr(t, "input_schema", "inputSchema")
                check(
                    f"{t.name} input schema requires protocol_version",
                    "protocol_version" in (schema.get("required") or []),
                    schema,
                )

            resources = await session.list_resources()
            uris = sorted(str(r.uri) for r in resources.resources)
            check("resources/list", uris == ["schema://pond", "stats://pond"], uris)

            r = await session.call_tool("pond_search", {"protocol_version": 1, "query": query, "limit": 3})
            body = structured(r)
            hits = (body or {}).get("results") or []
            check(
                "tools/call pond_search finds sessions",
                not attr(r, "is_error", "isError") and len(hits) > 0,
                body,
            )
            if hits:
                sid = hits[0]["session_id"]
                r = await session.call_tool("pond_get", {"protocol_version": 1, "session_id": sid})
                page = structured(r) or {}
                check(
                    "tools/call pond_get reads the hit's session",
                    not attr(r, "is_error", "isError") and json.dumps(page).find(sid) >= 0,
                    page,
                )

            r = await session.call_tool("pond_get", {"protocol_version": 1, "session_id": "no-such-session"})
            err = (structured(r) or {}).get("error") or {}
            check(
                "tools/call pond_get of an unknown session is an error result",
                bool(attr(r, "is_error", "isError")) and err.get("code") == "not_found",
                r,
            )
            r = await session.call_tool("pond_search", {"protocol_version": 1, "query": query, "colour": "red"})
            err = (structured(r) or {}).get("error") or {}
            check(
                "an unknown argument is a validation_failed error result",
                bool(attr(r, "is_error", "isError")) and err.get("code") == "validation_failed",
                r,
            )

            for uri, key in [("stats://pond", "tables"), ("schema://pond", "operations")]:
                r = await session.read_resource(uri)
                text = attr(r.contents[0], "text")
                doc = json.loads(text)
                check(f"resources/read {uri}", key in doc, list(doc)[:10])


async def high_level(params, query):
    try:
        from mcp.client.client import Client
    except ImportError as e:  # the SDK's 1.x line has no high-level client
        print(f"SKIP Client(mode='auto'): {e}")
        return
    async with Client(params) as client:
        tools = await client.list_tools()
        names = sorted(t.name for t in tools.tools)
        check("Client(mode='auto') tools/list", names == ["pond_get", "pond_search"], names)
        r = await client.call_tool("pond_search", {"protocol_version": 1, "query": query})
        check("Client(mode='auto') pond_search", not attr(r, "is_error", "isError"), r)


async def main():
    pond, data, query = sys.argv[1:4]
    # The SDK gives a server only the environment it is handed (as harnesses do): the store is
    # passed explicitly, as `pond mcp install` writes it.
    params = StdioServerParameters(command=pond, args=["mcp", "--data", data], env={"PATH": "/usr/bin:/bin"})
    await legacy(params, query)
    await high_level(params, query)


try:
    asyncio.run(main())
except Exception as e:  # a crash of the client or the server is a failure, named
    check("the session ran to its end", False, repr(e))
failed = results.count(False)
print(f"{len(results) - failed} passed, {failed} failed")
sys.exit(1 if failed or not results else 0)
