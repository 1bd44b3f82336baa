import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Memory } from '../../src/domain/memory.js';
import type { BatchOutcome } from '../../src/memory/types.js';
import { silentLogger } from '../../src/logger.js';
import { JsonlStore } from '../../src/store/jsonl-store.js';
import { openService, tempDir } from '../support/helper.js';
import { TWO_SERVICES } from '../support/two-services.js';

const memoryOf = (outcome: BatchOutcome): Memory => {
  if (!('memory' in outcome)) throw new Error(`expected a memory, got ${JSON.stringify(outcome)}`);
  return outcome.memory;
};

describe.each(TWO_SERVICES)('a batch of writes (%s)', (_name, open) => {
  it('applies adds, updates and deletes in order in one store write, seen at once by the other service', async () => {
    const [a, b] = await open();
    const kept = await a.addMemory({ userId: 'u', text: 'lives in Paris', tags: ['home'] });
    const doomed = await a.addMemory({ userId: 'u', text: 'drives a red car' });
    const twice = await a.addMemory({ userId: 'u', text: 'likes jazz', agentId: 'dj' });
    const versionBefore = await a.store.version('u');
    const outcomes = await b.batch('u', [
      { op: 'add', text: 'adopted a dog named Max', tags: ['pets'], metadata: { kind: 'pet' }, agentId: 'ops' },
      { op: 'update', id: kept.id, text: 'lives in Berlin' },
      { op: 'delete', id: doomed.id },
      { op: 'delete', id: 'no-such-id' },
      { op: 'update', id: twice.id, importance: 0.9 },
      { op: 'update', id: twice.id, tags: ['music'], agentId: null },
      { op: 'update', id: doomed.id, text: 'gone already' },
    ]);
    // One write: the user's version moved on once (the JSONL store's clock may skip, never repeat).
    expect(await a.store.version('u')).toBeGreaterThan(versionBefore);
    const added = memoryOf(outcomes[0]);
    expect(outcomes[0]).toMatchObject({ created: true, memory: { text: 'adopted a dog named Max', agent_id: 'ops', metadata: { kind: 'pet' } } });
    expect(memoryOf(outcomes[1])).toMatchObject({ id: kept.id, text: 'lives in Berlin', version: 2 });
    expect(outcomes[2]).toEqual({ deleted: doomed.id });
    expect('error' in outcomes[3] && outcomes[3].error.code).toBe('NOT_FOUND');
    expect(memoryOf(outcomes[5])).toMatchObject({ id: twice.id, importance: 0.9, tags: ['music'], version: 3 });
    expect(memoryOf(outcomes[5]).agent_id).toBeUndefined();
    expect('error' in outcomes[6] && outcomes[6].error.code).toBe('NOT_FOUND');

    for (const service of [a, b]) {
      const listed = await service.list({ userId: 'u', limit: 10 });
      expect(listed.map((memory) => memory.text).sort()).toEqual(['adopted a dog named Max', 'likes jazz', 'lives in Berlin']);
      expect((await service.search({ userId: 'u', query: 'Berlin', limit: 1 }))[0].memory.id).toBe(kept.id);
      expect((await service.search({ userId: 'u', query: 'dog Max', limit: 1 }))[0].memory.id).toBe(added.id);
      expect((await service.history('u', twice.id)).versions.map((version) => version.version)).toEqual([1, 2, 3]);
      await expect(service.get('u', doomed.id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
      expect(await service.memoryCount()).toBe(3);
    }
    expect(await a.store.history('u', doomed.id)).toEqual([]);
  });

  it('writes only adds as one append, to a user not written before; an operation that cannot apply refuses only itself', async () => {
    const [a, b] = await open();
    const outcomes = await a.batch('fresh', [
      { op: 'add', text: 'first' },
      { op: 'add', text: 'second', expiresAtMs: Date.now() + 60_000, ttlSeconds: 5 },
      { op: 'delete', id: 'nothing-here' },
      { op: 'add', text: 'third' },
    ]);
    expect(outcomes.map((outcome) => ('memory' in outcome ? outcome.memory.text : 'error' in outcome ? outcome.error.code : 'deleted'))).toEqual(['first', 'INVALID_PARAMETER', 'NOT_FOUND', 'third']);
    expect((await b.list({ userId: 'fresh', limit: 10 })).map((memory) => memory.text)).toEqual(['third', 'first']);
    // Nothing that applies: no write at all.
    const version = await a.store.version('fresh');
    expect(await a.batch('fresh', [{ op: 'delete', id: 'nothing-here' }])).toMatchObject([{ error: { code: 'NOT_FOUND' } }]);
    expect(await a.store.version('fresh')).toBe(version);
  });

  it('treats an expired memory as not there', async () => {
    let now = Date.now();
    const [a] = await open({ clock: () => now });
    const memory = await a.addMemory({ userId: 'u', text: 'short-lived', ttlSeconds: 10 });
    now += 11_000;
    expect(await a.batch('u', [{ op: 'update', id: memory.id, text: 'revived' }, { op: 'delete', id: memory.id }])).toMatchObject([{ error: { code: 'NOT_FOUND' } }, { error: { code: 'NOT_FOUND' } }]);
  });
});

describe('an adds-only batch on JSONL', () => {
  it('is one append whose lines share a batch id, kept off every answer; cut short by a crash, none of it is loaded', async () => {
    const dataDir = await tempDir();
    const service = await openService({ dataDir });
    const before = await service.addMemory({ userId: 'u', text: 'acknowledged before the batch' });
    const outcomes = await service.batch('u', [
      { op: 'add', text: 'first of three' },
      { op: 'add', text: 'second of three' },
      { op: 'add', text: 'third of three' },
    ]);
    for (const outcome of outcomes) expect(Object.keys(memoryOf(outcome))).not.toContain('batch_id');
    const file = path.join(new JsonlStore(dataDir, silentLogger()).userDir('u'), 'memories.jsonl');
    const lines = (await readFile(file, 'utf8')).trim().split('\n').map((line) => JSON.parse(line) as { text: string; batch?: number; batch_id?: string });
    const batchLines = lines.filter((line) => line.text.endsWith('of three'));
    expect(batchLines.map((line) => line.batch)).toEqual([3, 3, 3]);
    expect(new Set(batchLines.map((line) => line.batch_id)).size).toBe(1);
    expect(batchLines[0]!.batch_id).toMatch(/^[0-9a-f-]{36}$/);
    expect((await service.list({ userId: 'u', limit: 10 })).every((memory) => !('batch_id' in memory))).toBe(true);
    await service.close();

    // As if the machine stopped after two of the three lines reached the disk.
    const whole = await readFile(file, 'utf8');
    await writeFile(file, whole.slice(0, whole.lastIndexOf('{"')));
    const reopened = await openService({ dataDir });
    expect((await reopened.list({ userId: 'u', limit: 10 })).map((memory) => memory.text)).toEqual([before.text]);
  });
});
