import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { COMPILED_CLI } from '../support/compiled.js';
import { register, tempDir } from '../support/helper.js';
import { runCli as run } from '../support/run-cli.js';
import { projectRoot } from '../support/server-process.js';

describe('memorypool changes', () => {
  it('prints a page of the feed; --follow prints each event as a JSON line, those another process writes too', async () => {
    const dataDir = await tempDir();
    const first = await run(dataDir, ['--json', 'add', 'the first note']);
    const page = await run(dataDir, ['--json', 'changes']);
    expect(page.code).toBe(0);
    expect(page.json).toMatchObject({ events: [{ seq: 1, type: 'added', memory_id: first.json.id, memory: { text: 'the first note' } }], next_cursor: '1' });

    const follower = spawn(process.execPath, [COMPILED_CLI, 'changes', '--follow', '--wait', '5'], {
      cwd: projectRoot,
      env: { ...process.env, MEMORYPOOL_DATA_DIR: dataDir, MEMORYPOOL_EMBEDDER: 'hash' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise((resolve) => follower.once('exit', resolve));
    register(async () => {
      follower.kill('SIGKILL');
      await exited;
    });
    let stdout = '';
    const lines = (count: number) =>
      new Promise<string[]>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no ${count} lines within 60 s: ${stdout}`)), 60_000);
        const check = () => {
          const whole = stdout.split('\n').filter(Boolean);
          if (whole.length >= count) {
            clearTimeout(timer);
            resolve(whole);
          }
        };
        follower.stdout!.on('data', (chunk: Buffer) => {
          stdout += chunk.toString();
          check();
        });
        check();
      });
    expect(JSON.parse((await lines(1))[0])).toMatchObject({ seq: 1, type: 'added' });
    const second = await run(dataDir, ['--json', 'add', 'written by another process']);
    const events = (await lines(2)).map((line) => JSON.parse(line));
    expect(events[1]).toMatchObject({ seq: 2, type: 'added', memory_id: second.json.id, memory: { text: 'written by another process' } });
    follower.kill('SIGINT');
    expect(await exited).toBe(0);
  });
});
