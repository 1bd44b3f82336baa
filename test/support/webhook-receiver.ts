import { execFileSync } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { register } from './helper.js';

/**
 * A webhook receiver on a loopback port, for the delivery tests: it records every POST (body and
 * signature header) and answers each as `behave` says: a status, or `hang` (no answer at all, so
 * the sender's timeout fires). Closed after the test.
 */

export interface Received {
  body: string;
  signature: string;
  /** The authorization header, when the hook's URL carried credentials. */
  authorization?: string;
  /** The body parsed. */
  event: { id: string; seq: number; type: string; user_id: string; memory_id: string | null; memory: { text: string } | null };
  /** What the receiver answered (`hang`: nothing). */
  answer: number | 'hang';
}

export interface Receiver {
  url: string;
  received: Received[];
  /** The deliveries it answered 2xx, deduplicated on `id` (the first of each), in arrival order. */
  accepted(): Received[];
  /** Resolves once `test` holds of what was received; rejects after the timeout with what it has. */
  waitFor(test: (received: Received[]) => boolean, timeoutMs?: number): Promise<void>;
}

/** `delayMs`: each answer comes this long after the request (a slow receiver, so a test can act mid-stream). */
export async function startReceiver(behave: (attempt: number, event: Received['event']) => number | 'hang' = () => 200, options: { delayMs?: number } = {}): Promise<Receiver> {
  const received: Received[] = [];
  const hanging = new Set<http.ServerResponse>();
  const server = http.createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => (body += chunk));
    request.on('end', () => {
      // A request cut short (its sender SIGKILLed mid-body, as the crash tests do) is no
      // delivery: nothing is recorded, and a live sender of a malformed body would see a 400.
      let event: Received['event'];
      try {
        event = JSON.parse(body) as Received['event'];
      } catch {
        if (!response.destroyed) response.writeHead(400, { 'content-type': 'text/plain' }).end('malformed');
        return;
      }
      const answer = behave(received.length, event);
      received.push({ body, signature: String(request.headers['memorypool-signature'] ?? ''), authorization: request.headers.authorization, event, answer });
      if (answer === 'hang') hanging.add(response);
      else if (options.delayMs) setTimeout(() => response.writeHead(answer, { 'content-type': 'text/plain' }).end('ok'), options.delayMs);
      else response.writeHead(answer, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  register(async () => {
    for (const response of hanging) response.destroy();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  const accepted = (): Received[] => {
    const seen = new Set<string>();
    return received.filter((entry) => typeof entry.answer === 'number' && entry.answer < 300 && !seen.has(entry.event.id) && seen.add(entry.event.id));
  };
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    received,
    accepted,
    async waitFor(test, timeoutMs = 20_000) {
      const deadline = performance.now() + timeoutMs;
      while (!test(received)) {
        if (performance.now() > deadline) throw new Error(`the receiver did not get what was awaited; it got: ${JSON.stringify(received.map((entry) => [entry.event.id, entry.answer]))}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
  };
}

/**
 * Checks each delivery's signature with Python's hmac (an implementation independent of the
 * service's node:crypto), as a receiver would: `t=<unix>,v1=<hex>` is HMAC-SHA256 of `<t>.<body>`.
 * Returns, per delivery, whether it verified.
 */
export function verifiedByPython(secret: string, deliveries: readonly Pick<Received, 'body' | 'signature'>[]): boolean[] {
  const script = `
import hashlib, hmac, json, sys
data = json.load(sys.stdin)
out = []
for d in data["deliveries"]:
    parts = dict(p.split("=", 1) for p in d["signature"].split(","))
    expected = hmac.new(data["secret"].encode(), (parts["t"] + "." + d["body"]).encode(), hashlib.sha256).hexdigest()
    out.append(hmac.compare_digest(expected, parts.get("v1", "")))
print(json.dumps(out))
`;
  const output = execFileSync('python3', ['-c', script], { input: JSON.stringify({ secret, deliveries }), encoding: 'utf8' });
  return JSON.parse(output) as boolean[];
}
