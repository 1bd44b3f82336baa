import { execFile } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

// In a process of its own, because what fails without the park is the process: onnxruntime-node
// 1.14 aborted or segfaulted in 5 of 10 runs of this open-use-close sequence when closing
// terminated the threads (src/embedding/onnx-threads.ts).

describe('onnxruntime threads, opened and closed in turn', () => {
  it('answer the same in every round from one parked thread each, and the process exits 0 by itself', async () => {
    const script = path.resolve('test/support/onnx-threads-child.ts');
    const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      execFile(process.execPath, ['--import', 'tsx', script], { timeout: 90_000 }, (error, out, err) =>
        resolve({ code: error ? ((error as { code?: number }).code ?? null) : 0, stdout: String(out), stderr: String(err) }),
      );
    });
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    const { rounds, refused } = JSON.parse(stdout.trim().split('\n').at(-1)!) as {
      rounds: { encoderThread: number; rerankerThread: number; first: number; logits: number[] }[];
      refused: string;
    };
    expect(rounds).toHaveLength(3);
    for (const round of rounds.slice(1)) expect(round).toEqual(rounds[0]);
    expect(rounds[0]!.encoderThread).not.toBe(rounds[0]!.rerankerThread);
    expect(refused).toMatch(/closed/);
  });
});
