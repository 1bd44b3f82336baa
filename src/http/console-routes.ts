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

/** Where a client that lands on / can go: none of it holds data. */
const INDEX = { service: 'memorypool', console: '/ui', docs: '/docs', openapi: '/openapi.json', health: '/health' };

/**
 * The web console at /ui (its script and styles under /ui/): static files that call the same
 * HTTP API with the token the user types in, so serving them needs no token and exposes no data.
 * / sends a browser to the console and tells an API client, in JSON, where things are.
 */
export function registerConsoleRoutes(app: FastifyInstance): void {
  app.get('/', async (request, reply) => (/\btext\/html\b/.test(request.headers.accept ?? '') ? reply.redirect('/ui') : INDEX));
  app.get('/ui', async (_request, reply) => reply.type('text/html; charset=utf-8').header('cache-control', 'no-cache').send(await readFile(path.join(CONSOLE_DIR, 'index.html'))));
  app.get('/ui/:file', async (request, reply) => {
    const { file } = request.params as { file: string };
    const type = FILES[file];
    if (!type) throw createError('NOT_FOUND', `No file ${JSON.stringify(file)} under /ui`);
    return reply.type(type).header('cache-control', 'no-cache').send(await readFile(path.join(CONSOLE_DIR, file)));
  });
}
