import { cp, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { expectServesEarlierAnswers, type EarlierAnswers } from '../support/earlier-formats.js';
import { tempDir } from '../support/helper.js';
import { projectRoot, startServerProcess } from '../support/server-process.js';

/**
 * Data directories written by earlier builds of this repository open in this one and serve
 * every memory, version and Add request id they held. The fixtures under
 * test/fixtures/data-dirs/<commit>/ were written by running that commit's server
 * (test/fixtures/make-data-dir-fixtures.sh, which also saved in expected.json what that build
 * answered); they are the formats the JSONL store went through: base64 vectors in the line and
 * no versions (1f2011a), updates in place with a seq per version (72b6758), versions and their
 * history served over HTTP (03410a9, the format of today), and lines holding the stored unit
 * features `fx` (a77c27a; reverted, so the lines of that build carry a field this one ignores).
 */

const FIXTURES = path.join(projectRoot, 'test/fixtures/data-dirs');

describe('data directories of earlier builds', async () => {
  const commits = (await readdir(FIXTURES)).sort();

  it('are there: one per format the JSONL store went through', () => {
    expect(commits).toEqual(['03410a9', '1f2011a', '72b6758', 'a77c27a']);
  });

  for (const commit of commits) {
    it(`open with every memory, version and request id of ${commit}`, async () => {
      const expected = JSON.parse(await readFile(path.join(FIXTURES, commit, 'expected.json'), 'utf8')) as EarlierAnswers;
      const dataDir = await tempDir();
      await cp(path.join(FIXTURES, commit, 'data'), dataDir, { recursive: true });
      const server = await startServerProcess({ dataDir });
      await expectServesEarlierAnswers(server, expected);
      expect(JSON.parse(await readFile(path.join(dataDir, 'format.json'), 'utf8'))).toEqual({ memorypool_data_format: 1 });
      expect((await server.stop()).code).toBe(0);
    });
  }

  it("drops a77c27a's stored features from the line an update writes, and answers the update without them", async () => {
    const dataDir = await tempDir();
    await cp(path.join(FIXTURES, 'a77c27a', 'data'), dataDir, { recursive: true });
    const [melanieDir] = (await readdir(path.join(dataDir, 'users'))).filter((name) => name.startsWith('melanie-'));
    const lines = async () => (await readFile(path.join(dataDir, 'users', melanieDir, 'memories.jsonl'), 'utf8')).trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    const [stored] = await lines();
    expect(stored.fx).toBeDefined();
    const server = await startServerProcess({ dataDir });
    const answer = await fetch(`${server.url}/mem/${stored.id as string}`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ user_id: 'melanie', text: 'Melanie paints seascapes' }) });
    expect(answer.status).toBe(200);
    const updated = (await answer.json()) as Record<string, unknown>;
    expect(updated).toMatchObject({ id: stored.id, text: 'Melanie paints seascapes', version: 2 });
    expect(updated).not.toHaveProperty('fx');
    expect((await server.stop()).code).toBe(0);
    const written = (await lines()).filter((line) => line.id === stored.id).at(-1)!;
    expect(written.text).toBe('Melanie paints seascapes');
    expect(written).not.toHaveProperty('fx');
  });
});
