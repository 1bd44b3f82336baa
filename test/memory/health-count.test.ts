import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import { JsonlMemoryStore } from '../../src/store/jsonl-memory-store.js';
import { openService, tempDir } from '../support/helper.js';

/** A store whose count of the pool is held until released: the one measure of every user after an upgrade, at 100,000 users. */
class SlowCountStore extends JsonlMemoryStore {
  release: () => void = () => undefined;
  private readonly held = new Promise<void>((resolve) => (this.release = resolve));
  override async countMemories(): Promise<number> {
    await this.held;
    return super.countMemories();
  }
}

describe('the health probe\'s count', () => {
  it('answers with the last count known when counting the pool takes long, and with the count once it is done', async () => {
    const store = new SlowCountStore(await tempDir(), silentLogger());
    const service = await openService({ store, preload: false });
    await service.addMemory({ userId: 'u', text: 'the probe must not wait for a count' });
    const started = performance.now();
    expect(await service.healthCount()).toBe(1);
    expect(performance.now() - started).toBeGreaterThan(1_500);
    store.release();
    expect(await service.healthCount()).toBe(1);
    await service.addMemory({ userId: 'v', text: 'another one' });
    expect(await service.healthCount()).toBe(2);
  });
});
