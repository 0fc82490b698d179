// A webhook receiver that verifies every delivery with the Standard Webhooks library.
//
//     npm install standardwebhooks
//     WEBHOOK_SECRET=whsec_... node webhook_receiver.js 8000   (after tsc)
//
// Each delivery whose signature holds is answered 204 and printed as a line of JSON: its
// `webhook-id` and the event. Any other request is answered 400 and printed as refused.

import { readFileSync } from "node:fs";
import { createServer, IncomingMessage, ServerResponse } from "node:http";
import { Webhook } from "standardwebhooks";

// The endpoint's secret: WEBHOOK_SECRET, or the file WEBHOOK_SECRET_FILE names.
function secret(): string {
  const path = process.env.WEBHOOK_SECRET_FILE;
  return path ? readFileSync(path, "utf8").trim() : (process.env.WEBHOOK_SECRET ?? "");
}

const server = createServer((request: IncomingMessage, response: ServerResponse) => {
  const chunks: Buffer[] = [];
  request.on("data", (chunk: Buffer) => chunks.push(chunk));
  request.on("end", () => {
    const body = Buffer.concat(chunks).toString("utf8");
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(request.headers)) {
      if (typeof value === "string") headers[name] = value;
    }
    try {
      // Checks the signature and the timestamp (within 5 minutes), then parses the body.
      const event = new Webhook(secret()).verify(body, headers);
      response.writeHead(204).end();
      console.log(JSON.stringify({ "webhook-id": headers["webhook-id"], event }));
    } catch (err) {
      response.writeHead(400).end();
      console.log(JSON.stringify({ refused: String(err) }));
    }
  });
});

server.listen(Number(process.argv[2] ?? 0), "127.0.0.1", () => {
  const address = server.address();
  console.log(JSON.stringify({ listening: typeof address === "object" ? address?.port : 0 }));
});
