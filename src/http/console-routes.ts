import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { createError } from '../errors.js';
import { PACKAGE_ROOT } from './package-files.js';

const CONSOLE_DIR = path.join(PACKAGE_ROOT, 'src', 'console');

/** The console's files, by name: nothing else under the folder is served. */
const FILES: Record<string, string> = {
  'console.js': 'text/javascript; charset=utf-8',
  'console.css': 'text/css; charset=utf-8',
};

/**
 * The web console at / (its scripts under /ui/): static files that call the same HTTP API with
 * the token the user types in, so serving them needs no token and exposes no data.
 */
export function registerConsoleRoutes(app: FastifyInstance): void {
  app.get('/', async (_request, reply) => reply.type('text/html; charset=utf-8').header('cache-control', 'no-cache').send(await readFile(path.join(CONSOLE_DIR, 'index.html'))));
  app.get('/ui/:file', async (request, reply) => {
    const { file } = request.params as { file: string };
    const type = FILES[file];
    if (!type) throw createError('NOT_FOUND', `No file ${JSON.stringify(file)} under /ui`);
    return reply.type(type).header('cache-control', 'no-cache').send(await readFile(path.join(CONSOLE_DIR, file)));
  });
}
