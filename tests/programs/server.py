from mcpspec.runtime.connection import Server

server = Server("demo", "1.0")


@server.tool()
async def add(a: int, b: int) -> int:
    return a + b


@server.resource("config://app")
async def config() -> str:
    return "debug=false"


@server.resource("greeting://{name}")
async def greeting(name: str) -> str:
    return f"Hello, {name}!"


@server.prompt()
async def review(code: str) -> str:
    return f"Please review this code:\n\n{code}"


if __name__ == "__main__":
    server.run()
