import { execFile } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

// The real model (models/use-lite), in a process of its own: nothing else there has loaded
// onnxruntime, so what is tested is that an encoder thread started after the last one ended can
// load it again. Its exit status is not asserted: after a thread was torn down, onnxruntime's
// teardown at process exit sometimes crashes (4 exits of 30 in a loop here); the answers before
// it are what the service depends on. Retried for the same reason: one run of about twenty here
// printed nothing (the crash came early); without the fix every run fails, retries included.

describe('WorkerEmbedder after its thread dies', () => {
  it('starts a thread that encodes again on the next call', { retry: 2 }, async () => {
    const script = path.resolve('test/support/encoder-restart-child.ts');
    const stdout = await new Promise<string>((resolve) => {
      execFile(process.execPath, ['--import', 'tsx', script], { timeout: 60_000 }, (_error, out) => resolve(String(out)));
    });
    const line = stdout.split('\n').find((text) => text.startsWith('{'));
    expect(line, stdout).toBeDefined();
    expect(JSON.parse(line!)).toEqual({ cosine: expect.any(Number) });
    expect(JSON.parse(line!).cosine).toBeGreaterThan(0.99999);
  });
});
