// A stdio MCP server (official SDK 1.32) whose tool and prompt lists change on a call, for
// tests/integration/gate_listen.sh: `grow` adds a tool `grown_N` and sends
// notifications/tools/list_changed; `grow_prompt` adds a prompt `p_N` and sends
// notifications/prompts/list_changed; `echo` answers its text. Usage: node upstream_listen.mjs
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, GetPromptRequestSchema, ListPromptsRequestSchema, ListToolsRequestSchema, McpError }
  from "@modelcontextprotocol/sdk/types.js";

const object = { type: "object", properties: {} };
const tools = [
  { name: "grow", description: "adds a tool to this server's list", inputSchema: object },
  { name: "grow_prompt", description: "adds a prompt to this server's list", inputSchema: object },
  { name: "echo", description: "answers its text", inputSchema: { type: "object", properties: { text: { type: "string" } } } },
];
const prompts = [{ name: "p_0", description: "a prompt" }];
const server = new Server({ name: "assent-listen-upstream", version: "1.0.0" },
  { capabilities: { tools: { listChanged: true }, prompts: { listChanged: true } } });
server.setRequestHandler(ListPromptsRequestSchema, async () => ({ prompts }));
server.setRequestHandler(GetPromptRequestSchema, async (req) => ({
  messages: [{ role: "user", content: { type: "text", text: `prompt ${req.params.name}` } }] }));
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
server.setRequestHandler(CallToolRequestSchema, async (req) => {
  const name = req.params.name;
  if (name === "grow") {
    const added = `grown_${tools.length - 1}`;
    tools.push({ name: added, description: "added by grow", inputSchema: object });
    await server.sendToolListChanged();
    return { content: [{ type: "text", text: added }] };
  }
  if (name === "grow_prompt") {
    const added = `p_${prompts.length}`;
    prompts.push({ name: added, description: "added by grow_prompt" });
    await server.sendPromptListChanged();
    return { content: [{ type: "text", text: added }] };
  }
  if (name === "echo" || name.startsWith("grown_"))
    return { content: [{ type: "text", text: String(req.params.arguments?.text ?? name) }] };
  throw new McpError(-32602, `no tool ${name}`);
});
await server.connect(new StdioServerTransport());
