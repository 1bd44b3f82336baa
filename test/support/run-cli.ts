import { spawn } from 'node:child_process';
import { assertBuilt, COMPILED_CLI } from './compiled.js';
import { projectRoot } from './server-process.js';

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
  json: any;
}

/** Runs the real command (compiled, as installed) on a data dir, with the test embedder. */
export async function runCli(dataDir: string, args: string[], stdin?: string): Promise<CliResult> {
  await assertBuilt();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [COMPILED_CLI, ...args], {
      cwd: projectRoot,
      env: { ...process.env, MEMORYPOOL_DATA_DIR: dataDir, MEMORYPOOL_EMBEDDER: 'hash' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => {
      let json: unknown;
      try {
        json = JSON.parse(stdout);
      } catch {
        json = undefined;
      }
      resolve({ code, stdout, stderr, json });
    });
    if (stdin !== undefined) child.stdin.end(stdin);
    else child.stdin.end();
  });
}
