import { afterAll, describe, expect, it } from 'vitest';
import { HashEmbedder } from '../../src/embedding/hash-embedder.js';
import { LanceDbPeer } from '../../eval/peers/lancedb-peer.js';
import { OramaPeer } from '../../eval/peers/orama-peer.js';
import type { Peer, PeerUnit } from '../../eval/peers/peer.js';

const embedder = new HashEmbedder({ dimensions: 32 });
const texts = [
  'Caroline: I went to the LGBTQ support group yesterday',
  'Melanie: We camped by the lake and watched the meteor shower',
  'Caroline: I am researching adoption agencies',
  'Melanie: My kids love painting pottery',
];

async function units(): Promise<PeerUnit[]> {
  const vectors = await embedder.embed(texts);
  return texts.map((lexicalText, index) => ({ index, lexicalText, vector: vectors[index] }));
}

describe.each<[string, () => Peer]>([
  ['orama', () => new OramaPeer(embedder.dimensions)],
  ['lancedb', () => new LanceDbPeer()],
])('%s peer', (_name, make) => {
  const peer = make();
  afterAll(() => peer.close());

  it('ranks the unit that matches the query first, per user', async () => {
    await peer.addUser('u1', await units());
    await peer.addUser('u2', (await units()).slice(0, 1));
    const query = 'When did Melanie go camping at the lake?';
    const [vector] = await embedder.embed([query]);
    const ranked = await peer.search('u1', query, vector, 10);
    expect(ranked[0]).toBe(1);
    expect(new Set(ranked).size).toBe(ranked.length);
    expect(ranked.every((index) => index >= 0 && index < texts.length)).toBe(true);
    expect(await peer.search('u2', query, vector, 10)).toEqual([0]);
    expect(await peer.search('nobody', query, vector, 10)).toEqual([]);
  });
});
