import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/run-cli.js';
import { tempDir } from '../support/helper.js';
import { writeTinyCrossEncoder } from '../support/tiny-cross-encoder.js';

describe('memorypool --reranker-dir', () => {
  it('reranks a search (--no-rerank: the fused ranking), and refuses a folder that is no cross-encoder in one line', async () => {
    const dataDir = await tempDir();
    const model = path.join(await tempDir('memorypool-reranker-'), 'model');
    await writeTinyCrossEncoder(model);
    const texts = ['my sister went to the park with the dog', 'the dog likes to swim in the lake', 'my brother has a cat', 'a walk with the dog by the river', 'the puppy saw a cat in the park'];
    const batch = { tool: 'memorypool', params: { action: 'batch', operations: texts.map((text) => ({ op: 'add', text })) } };
    expect((await runCli(dataDir, ['invoke'], JSON.stringify(batch))).code).toBe(0);
    const search = (flags: string[], searchFlags: string[] = []) => runCli(dataDir, [...flags, 'search', 'where is the dog', '--limit', '5', ...searchFlags]);
    const fused = await search([]);
    const reranked = await search(['--reranker-dir', model]);
    const off = await search(['--reranker-dir', model], ['--no-rerank']);
    expect(reranked.code).toBe(0);
    const ranking = (result: { json: Array<{ text: string; score: number }> }) => result.json.map((hit) => [hit.text, hit.score]);
    expect(ranking(reranked)).not.toEqual(ranking(fused));
    expect(ranking(off)).toEqual(ranking(fused));

    const refused = await search(['--reranker-dir', path.join(model, 'missing')]);
    expect(refused.code).toBe(5);
    expect(refused.json).toMatchObject({ detail: { code: 'RERANKER_UNAVAILABLE', reason: expect.stringMatching(/^MEMORYPOOL_RERANKER_DIR: .*missing is not a folder$/) } });
  });
});
