import { describe, expect, it } from 'vitest';
import { tempDir } from '../helper.js';
import { runCli as run } from '../support/run-cli.js';

describe('memorypool CLI', () => {
  it('--help lists every command, and each command has its own help', async () => {
    const dataDir = await tempDir();
    const help = await run(dataDir, ['--help']);
    expect(help.code).toBe(0);
    for (const command of ['serve', 'add', 'search', 'list', 'get', 'delete', 'stats', 'delete-user', 'invoke']) expect(help.stdout).toContain(command);
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
});
