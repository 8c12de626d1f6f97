import sys

import anyio

from mcpspec.runtime.connection import Client


async def main() -> None:
    async with Client.stdio(sys.executable, ["server.py"]) as client:
        print((await client.call_tool("add", {"a": 2, "b": 40})).text)
        print((await client.read_resource("config://app")).contents[0].text)
        print((await client.read_resource("greeting://Ada")).contents[0].text)
        prompt = await client.get_prompt("review", {"code": "x = 1"})
        print(prompt.messages[0].content.text)


anyio.run(main)
