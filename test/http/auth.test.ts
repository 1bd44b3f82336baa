import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { Authenticator } from '../../src/http/auth.js';
import { silentLogger } from '../../src/logger.js';
import type { MemoryService } from '../../src/memory/memory-service.js';
import { request, startServerProcess } from '../support/server-process.js';
import { openService, register, tempDir } from '../support/helper.js';

/**
 * Tokens scoped to user-id prefixes (a tokens file named in config): a request for a user
 * outside the token's scope is a 403 with the error body on every route, an in-scope one works,
 * stats show only what the token may see, and no token ever reaches the logs.
 */

const ADMIN = 'admin-token-4f1c9a7e2b6d';
const TEAM_A = 'team-a-token-8c3e5f0a1d97';
const TEAM_B = 'team-b-token-2a7d4c9e6b13';
const NOBODY = 'nobody-token-5e8b1f3c7a20';
const EVERYONE = 'everyone-token-9d2f6a4c8e15';

const TOKENS_FILE = [
  { token: TEAM_A, user_prefixes: ['team-a/'] },
  { token: TEAM_B, user_prefixes: ['team-b/', 'shared/b-'] },
  { token: NOBODY, user_prefixes: [] },
  { token: EVERYONE },
];

type Form = 'bearer' | 'token' | 'x-api-key';
const FORMS: Form[] = ['bearer', 'token', 'x-api-key'];

function credentials(token: string, form: Form = 'bearer'): Record<string, string> {
  if (form === 'x-api-key') return { 'x-api-key': token };
  return { authorization: `${form === 'bearer' ? 'Bearer' : 'Token'} ${token}` };
}

async function writeTokensFile(dir: string, content: string = JSON.stringify(TOKENS_FILE)): Promise<string> {
  const file = path.join(dir, 'tokens.json');
  await writeFile(file, content, { mode: 0o600 });
  return file;
}

async function buildScoped(): Promise<{ app: FastifyInstance; service: MemoryService }> {
  const dir = await tempDir();
  const service = await openService({ dataDir: path.join(dir, 'data') });
  const authenticator = Authenticator.fromConfig({ token: ADMIN, tokensFile: await writeTokensFile(dir) });
  const app = await buildApp({ service, authenticator, logger: silentLogger() });
  register(() => app.close());
  return { app, service };
}

const addBody = (userId: string, requestId = 'r1') => ({
  request_id: requestId,
  user_id: userId,
  session_id: 's1',
  messages: [{ role: 'Caroline', content: `A note for ${userId}: the lantern festival is on Friday.`, timestamp: 1_704_067_200_000 }],
});

/**
 * Every route that touches a user's data, as a request acting for `userId` (`undefined`: the
 * route's default user) on memory `id`.
 */
function userRoutes(userId: string | undefined, id: string): Array<[string, InjectOptions]> {
  const q = userId === undefined ? '' : `user_id=${encodeURIComponent(userId)}`;
  const params = userId === undefined ? {} : { user_id: userId };
  const routes: Array<[string, InjectOptions]> = [
    ['POST /mem', { method: 'POST', url: '/mem', payload: { text: 'a new memory', ...params } }],
    ['GET /mem/search', { method: 'GET', url: `/mem/search?query=lantern&${q}` }],
    ['GET /mem/list', { method: 'GET', url: `/mem/list?${q}` }],
    ['GET /mem/{id}', { method: 'GET', url: `/mem/${id}?${q}` }],
    ['PATCH /mem/{id}', { method: 'PATCH', url: `/mem/${id}?${q}`, payload: { text: 'an overwrite' } }],
    ['GET /mem/{id}/history', { method: 'GET', url: `/mem/${id}/history?${q}` }],
    ['DELETE /mem/{id}', { method: 'DELETE', url: `/mem/${id}?${q}` }],
    ...(['add', 'search', 'list', 'get', 'update', 'history', 'delete'] as const).map((action): [string, InjectOptions] => [
      `POST /invoke ${action}`,
      { method: 'POST', url: '/invoke', payload: { tool: 'memorypool', params: { action, text: 'a new memory', query: 'lantern', id, ...params } } },
    ]),
  ];
  if (userId === undefined) return routes;
  return [
    ['POST /add', { method: 'POST', url: '/add', payload: addBody(userId, 'scoped-add') }],
    ['POST /search', { method: 'POST', url: '/search', payload: { query: 'lantern', user_id: userId, top_k: 10 } }],
    ['POST /mem?user_id=', { method: 'POST', url: `/mem?${q}`, payload: { text: 'a new memory' } }],
    ['GET /mem/stats?user_id=', { method: 'GET', url: `/mem/stats?${q}` }],
    ['POST /invoke stats', { method: 'POST', url: '/invoke', payload: { params: { action: 'stats', user_id: userId } } }],
    ...routes,
    ['DELETE /users/{id}', { method: 'DELETE', url: `/users/${encodeURIComponent(userId)}` }],
  ];
}

async function seed(app: FastifyInstance, userIds: string[]): Promise<Map<string, string>> {
  const ids = new Map<string, string>();
  for (const userId of userIds) {
    const response = await app.inject({ method: 'POST', url: '/mem', headers: credentials(ADMIN), payload: { text: `the lantern festival, kept by ${userId}`, user_id: userId } });
    expect(response.statusCode).toBe(201);
    ids.set(userId, response.json().id);
  }
  return ids;
}

async function snapshot(service: MemoryService, userIds: string[]): Promise<string[][]> {
  return Promise.all(userIds.map(async (userId) => (await service.list({ userId, limit: 1000 })).map((memory) => memory.id).sort()));
}

describe('tokens scoped to user-id prefixes', () => {
  const outside = ['team-b/x', 'default', 'team-a', 'TEAM-A/x', 'x/team-a/', 'shared/b-1', ' team-a/x'];

  it('refuses every route for a user outside the token\'s scope with 403 and the error body, in all three forms, touching nothing', async () => {
    const { app, service } = await buildScoped();
    const everyone = [...outside, 'team-a/y'];
    const ids = await seed(app, everyone);
    const before = await snapshot(service, everyone);

    let i = 0;
    for (const userId of [...outside, undefined]) {
      // The memory id is the outside user's own, so a 404 could not hide a leak.
      for (const [label, options] of userRoutes(userId, ids.get(userId ?? 'default')!)) {
        const form = FORMS[i++ % FORMS.length];
        const response = await app.inject({ ...options, headers: { ...options.headers, ...credentials(TEAM_A, form) } });
        expect(response.statusCode, `${label} as ${JSON.stringify(userId)} (${form}): ${response.body}`).toBe(403);
        const body = response.json();
        // The tool's routes also carry `error` (its own clients read that); the platform's do not.
        const toolRoute = /^\/(mem|invoke)/.test(String(options.url));
        expect(body).toEqual(toolRoute ? { detail: { reason: expect.any(String) }, error: body.detail.reason } : { detail: { reason: expect.any(String) } });
      }
    }
    expect(await snapshot(service, everyone)).toEqual(before);
  });

  it('lets an in-scope request through on every route, including ids that merely start like a path', async () => {
    const { app, service } = await buildScoped();
    for (const userId of ['team-a/y', 'team-a/../team-b/x', 'team-a/']) {
      const [id] = [...(await seed(app, [userId])).values()];
      for (const [label, options] of userRoutes(userId, id)) {
        const response = await app.inject({ ...options, headers: { ...options.headers, ...credentials(TEAM_A, FORMS[label.length % 3]) } });
        // The /invoke actions on the id come after DELETE /mem/{id} removed the memory.
        const expected = ['get', 'update', 'history', 'delete'].some((action) => label === `POST /invoke ${action}`) ? [404] : [200, 201];
        expect(expected, `${label} as ${userId}: ${response.statusCode} ${response.body}`).toContain(response.statusCode);
      }
    }
    // "team-a/../team-b/x" is an id of its own: team-b/x was never written.
    expect(await service.list({ userId: 'team-b/x', limit: 10 })).toEqual([]);
  });

  it('a token with several prefixes covers each; one with none covers nobody; one without a list covers everyone', async () => {
    const { app } = await buildScoped();
    const ids = await seed(app, ['team-b/1', 'shared/b-2', 'team-a/3']);
    const status = async (token: string, userId: string) =>
      (await app.inject({ method: 'GET', url: `/mem/${ids.get(userId)}?user_id=${encodeURIComponent(userId)}`, headers: credentials(token) })).statusCode;
    expect([await status(TEAM_B, 'team-b/1'), await status(TEAM_B, 'shared/b-2'), await status(TEAM_B, 'team-a/3')]).toEqual([200, 200, 403]);
    expect([await status(NOBODY, 'team-b/1'), await status(NOBODY, 'team-a/3')]).toEqual([403, 403]);
    expect([await status(EVERYONE, 'team-b/1'), await status(EVERYONE, 'team-a/3')]).toEqual([200, 200]);
  });

  it('stats show only the users the token covers, with totals to match', async () => {
    const { app } = await buildScoped();
    await seed(app, ['team-a/1', 'team-a/2', 'team-b/1', 'shared/b-1', 'default']);
    await app.inject({ method: 'POST', url: '/add', headers: credentials(ADMIN), payload: addBody('team-a/1', 'more') });
    const stats = async (token: string) => {
      const viaGet = (await app.inject({ method: 'GET', url: '/mem/stats', headers: credentials(token) })).json();
      const viaInvoke = (await app.inject({ method: 'POST', url: '/invoke', headers: credentials(token), payload: { params: { action: 'stats' } } })).json();
      expect(viaInvoke).toEqual(viaGet);
      return { users: viaGet.per_user.map((entry: { user_id: string }) => entry.user_id).sort(), count: viaGet.count, userCount: viaGet.users };
    };
    expect(await stats(TEAM_A)).toEqual({ users: ['team-a/1', 'team-a/2'], count: 3, userCount: 2 });
    expect(await stats(TEAM_B)).toEqual({ users: ['shared/b-1', 'team-b/1'], count: 2, userCount: 2 });
    expect(await stats(NOBODY)).toEqual({ users: [], count: 0, userCount: 0 });
    expect(await stats(ADMIN)).toEqual({ users: ['default', 'shared/b-1', 'team-a/1', 'team-a/2', 'team-b/1'], count: 6, userCount: 5 });
  });

  it('missing, malformed and wrong credentials are a 401 with the error body on every route but /health', async () => {
    const { app } = await buildScoped();
    const wrong: Array<Record<string, string>> = [
      {},
      { authorization: 'Bearer' },
      { authorization: 'Bearer ' },
      { authorization: `Basic ${Buffer.from(`user:${TEAM_A}`).toString('base64')}` },
      { authorization: TEAM_A },
      { authorization: `Bearer ${TEAM_A}x` },
      { authorization: `Token ${TEAM_A.slice(0, -1)}` },
      { 'x-api-key': TEAM_A.toUpperCase() },
      { 'x-api-key': '' },
      { authorization: `Bearer ${TEAM_A.slice(0, 8)}`, 'x-api-key': TEAM_A.slice(8) },
    ];
    const routes = [...userRoutes('team-a/y', 'some-id'), ['GET /mem/stats', { method: 'GET', url: '/mem/stats' }] as [string, InjectOptions], ['GET /nope', { method: 'GET', url: '/nope' }] as [string, InjectOptions]];
    for (const [i, headers] of wrong.entries()) {
      for (const [label, options] of routes) {
        const response = await app.inject({ ...options, headers });
        expect(response.statusCode, `${label} with ${JSON.stringify(headers)} (#${i})`).toBe(401);
        expect(typeof response.json().detail.reason).toBe('string');
      }
    }
    expect((await app.inject({ method: 'GET', url: '/health' })).statusCode).toBe(200);
  });
});

describe('tokens in a real server\'s logs', () => {
  const secrets = [ADMIN, TEAM_A, TEAM_B, NOBODY, EVERYONE];
  /** Any 8 characters of a token would be a leak worth reporting. */
  const leaks = (text: string, tokens: string[]) => tokens.filter((token) => Array.from({ length: token.length - 7 }, (_, i) => token.slice(i, i + 8)).some((piece) => text.includes(piece)));

  it('at debug level, right, wrong and out-of-scope tokens in all three forms never appear on stderr', async () => {
    const dir = await tempDir();
    const server = await startServerProcess({
      dataDir: path.join(dir, 'data'),
      env: { MEMORYPOOL_TOKEN: ADMIN, MEMORYPOOL_TOKENS_FILE: await writeTokensFile(dir), MEMORYPOOL_LOG_LEVEL: 'debug' },
    });
    const wrongTokens = [`${TEAM_A}-typo`, 'guess-token-0000000000', TEAM_B.slice(0, 12)];
    const statuses = new Set<number>();
    for (const form of FORMS) {
      for (const token of [...secrets, ...wrongTokens]) {
        const headers = credentials(token, form);
        const calls = [
          request(`${server.url}/add`, { body: addBody('team-a/logs', `logs-${form}`), headers }),
          request(`${server.url}/search`, { body: { query: 'lantern', user_id: 'team-b/logs', top_k: 5 }, headers }),
          request(`${server.url}/search`, { body: { query: 'lantern', user_id: 'team-a/logs', top_k: 5.5 }, headers }),
          request(`${server.url}/mem/list?user_id=default`, { headers }),
          request(`${server.url}/mem/no-such-id?user_id=team-a/logs`, { headers }),
          request(`${server.url}/invoke`, { body: { params: { action: 'stats' } }, headers }),
          request(`${server.url}/users/${encodeURIComponent('team-b/nobody')}`, { method: 'DELETE', headers }),
          request(`${server.url}/add`, { body: '{"broken": ', headers }),
        ];
        for (const response of await Promise.all(calls)) statuses.add(response.status);
      }
    }
    // The traffic met every kind of answer the log could mention.
    for (const status of [200, 400, 401, 403, 404, 422]) expect(statuses).toContain(status);
    expect(await server.stop('SIGTERM')).toEqual({ code: 0, signal: null });

    const stderr = server.stderr();
    expect(server.logs().some((record) => record.level === 20)).toBe(true); // Debug lines were written.
    expect(leaks(stderr, [...secrets, ...wrongTokens])).toEqual([]);
    expect(stderr.toLowerCase()).not.toContain('authorization');
    expect(stderr.toLowerCase()).not.toContain('x-api-key');
  });

  it('a malformed tokens file stops the start with an error that names the file, not its tokens', async () => {
    const dir = await tempDir();
    // A token left unquoted: V8's JSON error would quote the text around it.
    const file = await writeTokensFile(dir, `[{"token": ${TEAM_A}, "user_prefixes": ["team-a/"]}]`);
    const failed = await startServerProcess({ dataDir: path.join(dir, 'data'), env: { MEMORYPOOL_TOKENS_FILE: file } }).then(
      () => 'started',
      (error: Error) => error.message,
    );
    expect(failed).toMatch(/exited before it was healthy \(code 1/);
    expect(failed).toContain(`Tokens file ${file} is not valid JSON`);
    expect(leaks(String(failed), [TEAM_A])).toEqual([]);
  });
});
