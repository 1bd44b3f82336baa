import { cp, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../support/helper.js';
import { projectRoot, startServerProcess } from '../support/server-process.js';

/**
 * Data directories written by earlier builds of this repository open in this one and serve
 * every memory, version and Add request id they held. The fixtures under
 * test/fixtures/data-dirs/<commit>/ were written by running that commit's server
 * (test/fixtures/make-data-dir-fixtures.sh, which also saved in expected.json what that build
 * answered); they are the formats the JSONL store went through: base64 vectors in the line and
 * no versions (1f2011a), updates in place with a seq per version (72b6758), versions and their
 * history served over HTTP (03410a9, the format of today).
 */

const FIXTURES = path.join(projectRoot, 'test/fixtures/data-dirs');

interface Expected {
  users: Record<string, Array<{ memory: Record<string, unknown>; history: { versions: Array<Record<string, unknown>> } | null }>>;
}

/** The platform Add the generator sent: sending it again must store nothing. */
const ADD = { request_id: 'fixture-r1', user_id: 'conv-1', session_id: 's1', messages: [
  { role: 'Caroline', content: 'I went to a support group yesterday.', timestamp: 1683554160000 },
  { role: 'Melanie', content: 'That sounds brave.', timestamp: 1683554220000 },
] };

describe('data directories of earlier builds', async () => {
  const commits = (await readdir(FIXTURES)).sort();

  it('are there: one per format the JSONL store went through', () => {
    expect(commits).toEqual(['03410a9', '1f2011a', '72b6758']);
  });

  for (const commit of commits) {
    it(`open with every memory, version and request id of ${commit}`, async () => {
      const expected = JSON.parse(await readFile(path.join(FIXTURES, commit, 'expected.json'), 'utf8')) as Expected;
      const dataDir = await tempDir();
      await cp(path.join(FIXTURES, commit, 'data'), dataDir, { recursive: true });
      const server = await startServerProcess({ dataDir });
      const get = async (route: string) => {
        const response = await fetch(`${server.url}${route}`);
        expect(response.status, route).toBe(200);
        return response.json();
      };

      for (const [user, memories] of Object.entries(expected.users)) {
        expect(memories.length, user).toBeGreaterThan(0);
        const listed = (await get(`/mem/list?user_id=${user}&limit=100`)) as Array<{ id: string }>;
        expect(listed.map((memory) => memory.id).sort(), user).toEqual(memories.map(({ memory }) => memory.id).sort());
        for (const { memory, history } of memories) {
          const now = (await get(`/mem/${memory.id}?user_id=${user}`)) as Record<string, unknown>;
          expect(now).toMatchObject(memory);
          const versions = ((await get(`/mem/${memory.id}/history?user_id=${user}`)) as { versions: Array<Record<string, unknown>> }).versions;
          // A build without history served none: its memory is this build's version 1.
          if (history) expect(versions).toEqual(history.versions);
          else expect(versions).toEqual([expect.objectContaining({ version: 1, text: memory.text })]);
        }
      }
      const caroline = (await get('/mem/list?user_id=caroline&limit=100')) as Array<{ text: string }>;
      expect(caroline.map((memory) => memory.text)).not.toContain('A memory deleted before the upgrade');

      const before = ((await get('/mem/list?user_id=conv-1&limit=100')) as unknown[]).length;
      const again = await fetch(`${server.url}/add`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ADD) });
      expect(await again.json()).toEqual({ success: true, request_id: 'fixture-r1', user_id: 'conv-1', session_id: 's1' });
      expect(((await get('/mem/list?user_id=conv-1&limit=100')) as unknown[]).length).toBe(before);

      const found = (await get('/mem/search?q=rescue+dog&user_id=caroline&limit=1')) as Array<{ text: string }>;
      expect(found[0]?.text).toMatch(/^Caroline adopted a rescue (dog|beagle) named Max$/);
      expect(JSON.parse(await readFile(path.join(dataDir, 'format.json'), 'utf8'))).toEqual({ memorypool_data_format: 1 });
      expect((await server.stop()).code).toBe(0);
    });
  }
});
