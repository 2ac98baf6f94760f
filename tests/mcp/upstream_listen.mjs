// A stdio MCP server (official SDK 1.32) whose tool list changes on a call, for
// tests/integration/gate_listen.sh: `grow` adds a tool `grown_N` and sends
// notifications/tools/list_changed; `echo` answers its text. Usage: node upstream_listen.mjs
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema, McpError } from "@modelcontextprotocol/sdk/types.js";

const object = { type: "object", properties: {} };
const tools = [
  { name: "grow", description: "adds a tool to this server's list", inputSchema: object },
  { name: "echo", description: "answers its text", inputSchema: { type: "object", properties: { text: { type: "string" } } } },
];
const server = new Server({ name: "assent-listen-upstream", version: "1.0.0" },
  { capabilities: { tools: { listChanged: true } } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
server.setRequestHandler(CallToolRequestSchema, async (req) => {
  const name = req.params.name;
  if (name === "grow") {
    const added = `grown_${tools.length - 1}`;
    tools.push({ name: added, description: "added by grow", inputSchema: object });
    await server.sendToolListChanged();
    return { content: [{ type: "text", text: added }] };
  }
  if (name === "echo" || name.startsWith("grown_"))
    return { content: [{ type: "text", text: String(req.params.arguments?.text ?? name) }] };
  throw new McpError(-32602, `no tool ${name}`);
});
await server.connect(new StdioServerTransport());
