import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { OPERATIONS } from '../../src/http/openapi-operations.js';
import { build } from '../support/helper.js';

const auth = { authorization: 'Bearer secret-token' };

/** `METHOD /path` for every route in fastify's own tree print-out (4 columns a level), HEAD twins aside. */
function servedRoutes(tree: string): string[] {
  const parents: string[] = [];
  const routes: string[] = [];
  for (const line of tree.split('\n')) {
    const match = /^([│ ]*)[├└]── (\S+)(?: \(([^)]+)\))?$/.exec(line);
    if (!match) continue;
    const depth = match[1].length / 4;
    const path = (parents[depth - 1] ?? '') + match[2];
    parents[depth] = path;
    for (const method of match[3]?.split(', ') ?? []) if (method !== 'HEAD') routes.push(`${method} ${path}`);
  }
  return routes;
}

describe('GET /openapi.json', () => {
  it('documents every registered route, and nothing that is not one', async () => {
    const { app } = await build({ token: 'secret-token' });
    const response = await app.inject({ method: 'GET', url: '/openapi.json' });
    expect(response.statusCode).toBe(200);
    const document = response.json();
    expect(document.openapi).toBe('3.1.0');
    const documented = Object.entries(document.paths as Record<string, Record<string, unknown>>).flatMap(([path, methods]) =>
      Object.keys(methods).map((method) => `${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`),
    );
    expect([...documented].sort()).toEqual(Object.keys(OPERATIONS).sort());
    // Fastify's own list of what it serves: nothing undocumented, nothing documented that is not served.
    const served = servedRoutes(app.printRoutes({ commonPrefix: false }));
    expect(served.length).toBeGreaterThan(15);
    expect(served.sort()).toEqual(documented.sort());
    // Every $ref resolves within the document (a schema's own $defs would not, once inlined).
    for (const ref of JSON.stringify(document).match(/"\$ref":"[^"]*"/g) ?? []) {
      const target = ref.slice(8, -1).replace(/^#\//, '').split('/').reduce((node: any, key) => node?.[key], document);
      expect(target, ref).toBeTypeOf('object');
    }
    expect(JSON.stringify(document)).not.toContain('$defs');
  });

  it('takes request schemas from the zod schemas the routes validate with', async () => {
    const { app } = await build();
    const { paths } = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const add = paths['/mem'].post.requestBody.content['application/json'].schema;
    expect(add.required).toEqual(['text']);
    expect(add.properties.importance).toMatchObject({ type: 'number', minimum: 0, maximum: 1 });
    const search = paths['/search'].post.requestBody.content['application/json'].schema;
    expect(search.required).toEqual(['query', 'user_id', 'top_k']);
    expect(search.properties.top_k).toMatchObject({ type: 'integer', minimum: 1 });
    const query = paths['/mem/search'].get.parameters.map((p: { name: string; required: boolean }) => [p.name, p.required]);
    expect(query).toEqual([['query', false], ['q', true], ['tag', false], ['agent_id', false], ['run_id', false], ['since', false], ['until', false], ['entity', false], ['limit', false], ['explain', false], ['rerank', false], ['user_id', false]]);
    const patch = paths['/mem/{id}'].patch.requestBody.content['application/json'].schema;
    expect(Object.keys(patch.properties)).toEqual(['text', 'tags', 'importance', 'metadata', 'agent_id', 'run_id', 'expires_at', 'ttl_seconds', 'user_id']);
    expect(paths['/mem/{id}/history'].get.responses['200']).toBeDefined();
    expect(paths['/mem/{id}'].get.parameters[0]).toMatchObject({ name: 'id', in: 'path', required: true });
    expect(paths['/health'].get.security).toEqual([]);
    expect(paths['/mem'].post.security).toBeUndefined();
  });

  it('every example passes its own schema, and its route answers it as documented', async () => {
    const { app } = await build({ token: 'secret-token' });
    for (const [key, doc] of Object.entries(OPERATIONS)) {
      for (const [name, example] of Object.entries(doc.examples ?? {})) {
        const schema = doc.body ?? doc.query!;
        expect(schema.safeParse(example).success, `${key} example ${name}`).toBe(true);
        const [method, url] = key.split(' ');
        const response = doc.body
          ? await app.inject({ method: method as 'POST', url, headers: auth, payload: example })
          : await app.inject({ method: method as 'GET', url, headers: auth, query: example as Record<string, string> });
        expect(response.statusCode, `${key} example ${name}: ${response.body}`).toBe(doc.success.status);
        const answer = doc.success.schema!.safeParse(response.json());
        expect(answer.success, `${key} example ${name} answer: ${answer.error && z.prettifyError(answer.error)}`).toBe(true);
      }
    }
  });

  it('the documented answers are what the routes send', async () => {
    const { app } = await build();
    const stored = (await app.inject({ method: 'POST', url: '/mem', payload: { text: 'tea', tags: ['drinks'] } })).json();
    const answers: Array<[string, unknown]> = [
      ['GET /health', (await app.inject({ method: 'GET', url: '/health' })).json()],
      ['GET /mem/:id', (await app.inject({ method: 'GET', url: `/mem/${stored.id}` })).json()],
      ['GET /mem/stats', (await app.inject({ method: 'GET', url: '/mem/stats' })).json()],
      ['GET /mem/search', (await app.inject({ method: 'GET', url: '/mem/search?q=tea&explain=true' })).json()],
      ['DELETE /users/:user_id', (await app.inject({ method: 'DELETE', url: '/users/nobody' })).json()],
      ['DELETE /mem/:id', (await app.inject({ method: 'DELETE', url: `/mem/${stored.id}` })).json()],
    ];
    expect((answers[3][1] as Array<{ explanation: unknown }>)[0].explanation).toBeDefined();
    for (const [key, answer] of answers) expect(OPERATIONS[key].success.schema!.safeParse(answer).success, key).toBe(true);
  });

  it('routes marked public answer without the token; the rest refuse it', async () => {
    const { app } = await build({ token: 'secret-token' });
    for (const [key, doc] of Object.entries(OPERATIONS)) {
      const [method, url] = key.split(' ');
      const concrete = url.replace('/docs/:file', '/docs/swagger-ui.css').replace('/ui/:file', '/ui/console.js').replace(/:\w+/g, 'x');
      const response = await app.inject({ method: method as 'GET', url: concrete });
      if (doc.public) expect(response.statusCode, key).not.toBe(401);
      else expect(response.statusCode, key).toBe(401);
    }
  });
});

describe('GET /docs', () => {
  it('serves Swagger UI from the installed package, pointed at /openapi.json', async () => {
    const { app } = await build({ token: 'secret-token' });
    const page = await app.inject({ method: 'GET', url: '/docs' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/text\/html/);
    expect(page.body).not.toMatch(/https?:\/\//);
    for (const asset of page.body.match(/(?:src|href)="([^"]+)"/g)!.map((attr) => attr.split('"')[1])) {
      const response = await app.inject({ method: 'GET', url: asset });
      expect(response.statusCode, asset).toBe(200);
      expect(response.body.length, asset).toBeGreaterThan(0);
    }
    expect((await app.inject({ method: 'GET', url: '/docs/init.js' })).body).toContain("url: '/openapi.json'");
    expect((await app.inject({ method: 'GET', url: '/docs/..%2Fpackage.json' })).statusCode).toBe(404);
  });
});
