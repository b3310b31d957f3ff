// Drives `tidemind serve` with the official TypeScript MCP client (@modelcontextprotocol/sdk), the
// one most agent hosts embed. The Python test sends one JSON command per line on stdin and reads
// one JSON answer per line on stdout, so every assertion lives in pytest:
//   {"op": "info"}                     server name, version, instructions, capabilities
//   {"op": "list"}                     tools with their annotations and input schemas
//   {"op": "call", "name", "arguments", "timeout_ms"?}
//                                      the result, or the error the client raised
// Arguments pass through JSON.parse and the SDK's JSON.stringify untouched: a lone surrogate
// arrives at the server as the "\ud800" escape JSON.stringify writes for it.
import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [command, ...args] = JSON.parse(process.argv[2]);
const transport = new StdioClientTransport({ command, args, stderr: "inherit" });
const client = new Client({ name: "tidemind-ts-interop", version: "1.0.0" });
await client.connect(transport);

const answer = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");

for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const cmd = JSON.parse(line);
  try {
    if (cmd.op === "info") {
      answer({ server: client.getServerVersion(), instructions: client.getInstructions() ?? null,
               capabilities: client.getServerCapabilities() ?? null });
    } else if (cmd.op === "list") {
      answer({ tools: (await client.listTools()).tools });
    } else if (cmd.op === "call") {
      const started = Date.now();
      const result = await client.callTool({ name: cmd.name, arguments: cmd.arguments ?? {} }, undefined,
                                           { timeout: cmd.timeout_ms ?? 30000 });
      answer({ result, ms: Date.now() - started });
    } else {
      answer({ thrown: `unknown op ${cmd.op}` });
    }
  } catch (err) {
    answer({ thrown: String(err?.message ?? err), code: err?.code ?? null });
  }
}
await client.close();
