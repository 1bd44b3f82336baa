import { spawn } from 'node:child_process';
import path from 'node:path';
import { projectRoot } from './server-process.js';

const cli = path.join(projectRoot, 'src/cli/memorypool.ts');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
  json: any;
}

/** Runs the real command (from source, through tsx) on a data dir, with the test embedder. */
export function runCli(dataDir: string, args: string[], stdin?: string): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', cli, ...args], {
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
