// What both reference servers of the gateway benchmarks share: request_feedback's
// input shape (the same as assentd's), as zod schemas for the official SDK.
import * as z from "../mcp/node_modules/zod/index.js";

export const TIMEOUT_MAX = 86400;
const subject = z.object({
  name: z.string().min(1).max(256),
  digest: z.object({ sha256: z.string().regex(/^[0-9a-f]{64}$/) }).strict().optional(),
  content: z.string().optional(),
}).strict();
export const inputSchema = {
  type: z.enum(["approval", "input", "selection", "confirmation"]),
  message: z.string().min(1).max(65536),
  context: z.union([z.record(z.string(), z.unknown()), z.string()]).optional(),
  options: z.array(z.string().min(1).max(1024)).min(1).max(32).optional(),
  default: z.string().max(4096).optional(),
  timeout_override: z.number().int().min(1).max(TIMEOUT_MAX).optional(),
  subject: z.union([subject, z.array(subject).min(1).max(16)]).optional(),
  audience: z.string().regex(/^[A-Za-z0-9._:/-]{1,128}$/).optional(),
  wait: z.boolean().optional(),
};
export const title = "Ask a human before acting";
export const description = "Pause and ask a human reviewer before a consequential action. Proceed only if approved is true.";
