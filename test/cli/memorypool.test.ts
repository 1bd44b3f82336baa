import { describe, expect, it } from 'vitest';
import { tempDir } from '../support/helper.js';
import { runCli as run } from '../support/run-cli.js';

describe('memorypool CLI', () => {
  it('--help lists every command, and each command has its own help', async () => {
    const dataDir = await tempDir();
    const help = await run(dataDir, ['--help']);
    expect(help.code).toBe(0);
    for (const command of ['serve', 'add', 'update', 'history', 'search', 'list', 'get', 'delete', 'stats', 'entities', 'delete-user', 'invoke']) expect(help.stdout).toContain(command);
    const addHelp = await run(dataDir, ['add', '--help']);
    expect(addHelp.code).toBe(0);
    expect(addHelp.stdout).toContain('--importance');
  });

  it('add, search, list, get, stats and delete on the same data directory, JSON on stdout only', async () => {
    const dataDir = await tempDir();
    const added = await run(dataDir, ['--json', 'add', 'Buy oat milk on the way home', '--tags', 'errand,shopping', '--importance', '0.7']);
    expect(added.code).toBe(0);
    expect(added.json).toMatchObject({ text: 'Buy oat milk on the way home', tags: ['errand', 'shopping'], importance: 0.7, source: 'cli', user_id: 'default' });
    expect(added.stdout.trim().split('\n')).toHaveLength(1);

    await run(dataDir, ['add', 'The dentist appointment is on Tuesday']);
    const search = await run(dataDir, ['--json', 'search', 'oat milk', '--limit', '1']);
    expect(search.code).toBe(0);
    expect(search.json).toHaveLength(1);
    expect(search.json[0]).toMatchObject({ id: added.json.id });
    expect(typeof search.json[0].score).toBe('number');

    const list = await run(dataDir, ['--json', 'list']);
    expect(list.json.map((memory: { text: string }) => memory.text)).toEqual(['The dentist appointment is on Tuesday', 'Buy oat milk on the way home']);
    expect((await run(dataDir, ['--json', 'list', '--tag', 'errand'])).json).toHaveLength(1);
    expect((await run(dataDir, ['--json', 'get', added.json.id])).json.id).toBe(added.json.id);
    const stats = await run(dataDir, ['--json', 'stats']);
    expect(stats.json).toMatchObject({ count: 2, users: 1 });
    expect((await run(dataDir, ['--json', 'delete', added.json.id])).json).toEqual({ deleted: added.json.id });
    const missing = await run(dataDir, ['--json', 'get', added.json.id]);
    expect(missing.code).toBe(3);
    expect(missing.json.detail.reason).toContain(added.json.id);
  });

  it('entities, and --entity on search and list', async () => {
    const dataDir = await tempDir();
    await run(dataDir, ['add', 'I met Caroline in Boston']);
    await run(dataDir, ['add', 'Caroline sent a postcard']);
    const entities = await run(dataDir, ['--json', 'entities', '--limit', '5']);
    expect(entities.code, entities.stderr).toBe(0);
    expect(entities.json.entities.map((entry: { entity: string; count: number }) => [entry.entity, entry.count])).toEqual([['Caroline', 2], ['Boston', 1]]);
    expect((await run(dataDir, ['--json', 'list', '--entity', 'boston'])).json.map((memory: { text: string }) => memory.text)).toEqual(['I met Caroline in Boston']);
    expect((await run(dataDir, ['--json', 'search', 'postcard', '--entity', 'CAROLINE'])).json).toHaveLength(2);
  });

  it('update and history, --meta on add and update', async () => {
    const dataDir = await tempDir();
    const added = await run(dataDir, ['--json', 'add', 'I live in Paris', '--meta', 'project=styx', '--meta', 'priority=2', '--meta', 'done=false']);
    expect(added.code, added.stderr).toBe(0);
    expect(added.json.metadata).toEqual({ project: 'styx', priority: 2, done: false });
    const updated = await run(dataDir, ['--json', 'update', added.json.id, '--text', 'I moved to Berlin', '--tags', 'home', '--importance', '0.7', '--meta', 'project=styx']);
    expect(updated.code, updated.stderr).toBe(0);
    expect(updated.json).toMatchObject({ id: added.json.id, version: 2, text: 'I moved to Berlin', tags: ['home'], importance: 0.7, metadata: { project: 'styx' } });
    const history = await run(dataDir, ['--json', 'history', added.json.id]);
    expect(history.json.versions.map((version: { text: string }) => version.text)).toEqual(['I live in Paris', 'I moved to Berlin']);
    const empty = await run(dataDir, ['--json', 'update', added.json.id]);
    expect(empty.code).toBe(2);
    expect(empty.json.error).toBe(empty.json.detail.reason);
    expect((await run(dataDir, ['--json', 'update', 'missing', '--text', 'x'])).code).toBe(3);
  });

  it('--meta, --since and --until filter search and list', async () => {
    const dataDir = await tempDir();
    const added = await run(dataDir, ['--json', 'add', 'I moved to Berlin', '--meta', 'project=styx']);
    await run(dataDir, ['add', 'I like Paris in spring']);
    const filtered = await run(dataDir, ['--json', 'search', 'Berlin Paris', '--meta', 'project=styx']);
    expect(filtered.json.map((hit: { id: string }) => hit.id)).toEqual([added.json.id]);
    expect((await run(dataDir, ['--json', 'list', '--meta', 'project=styx', '--since', added.json.created_at, '--until', String(Date.now() + 60_000)])).json).toHaveLength(1);
    expect((await run(dataDir, ['--json', 'list', '--since', String(Date.now() + 60_000)])).json).toEqual([]);
    expect((await run(dataDir, ['--json', 'add', 'x', '--meta', 'novalue'])).code).toBe(2);
  });

  it('invalid input exits non-zero with a JSON error body', async () => {
    const dataDir = await tempDir();
    const bad = await run(dataDir, ['--json', 'add', 'x', '--importance', '3']);
    expect(bad.code).toBe(2);
    expect(bad.json.detail.reason).toContain('importance');
    const badLimit = await run(dataDir, ['--json', 'search', 'x', '--limit', 'zero']);
    expect(badLimit.code).toBe(2);
    expect(badLimit.json.detail.reason).toContain('limit');
  });

  it('runs a BIT exec-mode payload from stdin, routed like /invoke', async () => {
    const dataDir = await tempDir();
    const payload = (params: Record<string, unknown>) => JSON.stringify({ tool_id: 'x1', tool: 'memorypool', invoked_by: 'agent', params });
    const added = await run(dataDir, [], payload({ action: 'add', text: 'Payload memory', tags: ['bit'] }));
    expect(added.code).toBe(0);
    expect(added.json).toMatchObject({ text: 'Payload memory', tags: ['bit'] });
    const searched = await run(dataDir, [], payload({ action: 'search', query: 'payload' }));
    expect(searched.json[0].id).toBe(added.json.id);
    const viaTool = await run(dataDir, ['invoke'], payload({ tool: 'list' }));
    expect(viaTool.json).toHaveLength(1);
    const unknown = await run(dataDir, [], payload({ action: 'explode' }));
    expect(unknown.code).toBe(2);
    expect(unknown.json.detail.reason).toContain('Unknown action');
    const garbage = await run(dataDir, [], 'not json');
    expect(garbage.code).toBe(2);
    expect(garbage.json.detail.reason).toContain('JSON');
  });

  it('delete-user removes a user\'s memories for good', async () => {
    const dataDir = await tempDir();
    await run(dataDir, ['add', 'private', '--user', 'alice']);
    await run(dataDir, ['add', 'other', '--user', 'bob']);
    const deleted = await run(dataDir, ['--json', 'delete-user', 'alice']);
    expect(deleted.json).toEqual({ deleted_user: 'alice', deleted: 1 });
    expect((await run(dataDir, ['--json', 'list', '--user', 'alice'])).json).toEqual([]);
    expect((await run(dataDir, ['--json', 'list', '--user', 'bob'])).json).toHaveLength(1);
  });
  it('sets scopes with --agent and --run, filters with them and --where, and streams every page with list --all', async () => {
    const dataDir = await tempDir();
    const planner = await run(dataDir, ['--json', 'add', 'Book the venue', '--agent', 'planner', '--run', 'r1', '--importance', '0.9']);
    expect(planner.json).toMatchObject({ agent_id: 'planner', run_id: 'r1' });
    for (let i = 0; i < 4; i++) await run(dataDir, ['add', `note ${i}`, '--agent', 'scribe']);
    expect((await run(dataDir, ['--json', 'list', '--agent', 'planner'])).json.map((m: { id: string }) => m.id)).toEqual([planner.json.id]);
    const where = await run(dataDir, ['--json', 'search', 'venue', '--where', '{"$or": [{"run_id": "r1"}, {"importance": {"$gt": 0.95}}]}']);
    expect(where.json.map((m: { id: string }) => m.id)).toEqual([planner.json.id]);
    const bad = await run(dataDir, ['--json', 'list', '--where', '{"$or": [{"run_id": 1}]}']);
    expect([bad.code, bad.json.error]).toEqual([2, 'where.$or[0].run_id: must be a string']);
    const all = await run(dataDir, ['list', '--all', '--limit', '2']);
    expect(all.code).toBe(0);
    const lines = all.stdout.trim().split('\n').map((line) => JSON.parse(line));
    expect(lines.map((m: { text: string }) => m.text)).toEqual(['note 3', 'note 2', 'note 1', 'note 0', 'Book the venue']);
    const page = await run(dataDir, ['--json', 'list', '--agent', 'scribe', '--limit', '3', '--cursor', (await run(dataDir, ['--json', 'invoke'], JSON.stringify({ params: { action: 'page', agent_id: 'scribe', limit: 1 } }))).json.next_cursor]);
    expect(page.json.memories.map((m: { text: string }) => m.text)).toEqual(['note 2', 'note 1', 'note 0']);
    expect(page.json.next_cursor).toBeNull();
  });

  it('sets, moves and clears an expiry with --expires and --ttl; an expired memory is listed no more; a bad time is refused', async () => {
    const dataDir = await tempDir();
    const before = Date.now();
    const brief = await run(dataDir, ['--json', 'add', 'The door code is 4711', '--ttl', '3600']);
    const expires = Date.parse(brief.json.expires_at);
    expect(expires).toBeGreaterThanOrEqual(before + 3_600_000 - 1_000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 3_600_000 + 1_000);
    const moved = await run(dataDir, ['--json', 'update', brief.json.id, '--expires', '2099-01-01T00:00:00Z']);
    expect(moved.json.expires_at).toBe('2099-01-01T00:00:00.000Z');
    const cleared = await run(dataDir, ['--json', 'update', brief.json.id, '--expires', 'never']);
    expect(cleared.json).not.toHaveProperty('expires_at');
    await run(dataDir, ['add', 'Gone already', '--expires', String(Date.now() - 1_000)]);
    expect((await run(dataDir, ['--json', 'list'])).json.map((m: { text: string }) => m.text)).toEqual(['The door code is 4711']);
    const bad = await run(dataDir, ['--json', 'add', 'when?', '--expires', 'next tuesday']);
    expect([bad.code, bad.json.error]).toEqual([2, 'expires_at: expires_at must be an ISO 8601 date or Unix milliseconds']);
  });

  it('reads several users with --user repeated, merged, each memory carrying its user', async () => {
    const dataDir = await tempDir();
    await run(dataDir, ['add', 'Book the venue']);
    await run(dataDir, ['add', 'The team books venues too', '--user', 'team']);
    const across = await run(dataDir, ['--json', 'search', 'venue', '--user', 'default', '--user', 'team']);
    expect(across.json.map((m: { user_id: string }) => m.user_id).sort()).toEqual(['default', 'team']);
    const merged = await run(dataDir, ['list', '--all', '--limit', '1', '--user', 'team', '--user', 'default']);
    expect(merged.stdout.trim().split('\n').map((line) => JSON.parse(line).text)).toEqual(['The team books venues too', 'Book the venue']);
  });
});
