"""The official MCP conformance suite against our server and client: the fixture
server, the client the suite drives, and the table of scenarios we know we fail."""
