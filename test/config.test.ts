import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';

describe('loadConfig: an encoder the user brings', () => {
  it('reads the model folder, pooling, prefixes and dense weight from the environment, flags first', () => {
    const config = loadConfig(
      { queryPrefix: 'query: ' },
      { MEMORYPOOL_MODEL_DIR: '/models/e5', MEMORYPOOL_POOLING: 'cls', MEMORYPOOL_QUERY_PREFIX: 'q: ', MEMORYPOOL_DOCUMENT_PREFIX: 'passage: ', MEMORYPOOL_DENSE_WEIGHT: '0.8' },
    );
    expect(config).toMatchObject({ modelDir: '/models/e5', pooling: 'cls', queryPrefix: 'query: ', documentPrefix: 'passage: ', denseWeight: 0.8 });
  });

  it('leaves the dense weight to the encoder unless set, and refuses one outside 0-1 or an unknown pooling', () => {
    expect(loadConfig({}, {}).denseWeight).toBeUndefined();
    expect(() => loadConfig({}, { MEMORYPOOL_DENSE_WEIGHT: '1.5' })).toThrow(/MEMORYPOOL_DENSE_WEIGHT/);
    expect(() => loadConfig({}, { MEMORYPOOL_POOLING: 'median' })).toThrow(/MEMORYPOOL_POOLING/);
  });
});
