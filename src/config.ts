import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';

/**
 * The only reader of environment variables. Command-line flags (already parsed by the CLI)
 * override the environment, which overrides the defaults below. `.env.example` documents each.
 */
const configSchema = z.object({
  host: z.string().min(1).default('127.0.0.1'),
  port: z.coerce.number().int().min(0).max(65535).default(8751),
  dataDir: z.string().min(1).default(path.join(os.homedir(), '.memorypool')),
  /** A single bearer token for every route but /health; unset runs the service open. */
  token: z.string().min(1).optional(),
  /** A JSON file of tokens scoped to user-id prefixes: [{"token": "...", "user_prefixes": ["team-a/"]}]. */
  tokensFile: z.string().min(1).optional(),
  embedder: z.enum(['onnx', 'hash', 'http']).default('onnx'),
  /** Folder holding the built model (default: the package's own models/). */
  modelDir: z.string().min(1).optional(),
  embedderUrl: z.string().url().optional(),
  embedderModel: z.string().min(1).optional(),
  embedderDimensions: z.coerce.number().int().positive().optional(),
  embedderApiKey: z.string().min(1).optional(),
  /** Largest top_k a search returns; larger requests are clamped, not rejected. */
  topKMax: z.coerce.number().int().positive().default(100),
  /** Largest request body in bytes (413 above it). */
  bodyLimit: z.coerce.number().int().positive().default(8 * 1024 * 1024),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Purge memories ingested more than this many days ago (off when unset). */
  retentionDays: z.coerce.number().positive().optional(),
  /** Serve GET /metrics without a token (for a scraper inside a trusted network). */
  metricsPublic: z.stringbool().default(false),
});

export type Config = z.infer<typeof configSchema>;
export type ConfigInput = z.input<typeof configSchema>;

const ENV_NAMES: Record<keyof Config, string> = {
  host: 'MEMORYPOOL_HOST',
  port: 'MEMORYPOOL_PORT',
  dataDir: 'MEMORYPOOL_DATA_DIR',
  token: 'MEMORYPOOL_TOKEN',
  tokensFile: 'MEMORYPOOL_TOKENS_FILE',
  embedder: 'MEMORYPOOL_EMBEDDER',
  modelDir: 'MEMORYPOOL_MODEL_DIR',
  embedderUrl: 'MEMORYPOOL_EMBEDDER_URL',
  embedderModel: 'MEMORYPOOL_EMBEDDER_MODEL',
  embedderDimensions: 'MEMORYPOOL_EMBEDDER_DIMENSIONS',
  embedderApiKey: 'MEMORYPOOL_EMBEDDER_API_KEY',
  topKMax: 'MEMORYPOOL_TOP_K_MAX',
  bodyLimit: 'MEMORYPOOL_BODY_LIMIT',
  logLevel: 'MEMORYPOOL_LOG_LEVEL',
  retentionDays: 'MEMORYPOOL_RETENTION_DAYS',
  metricsPublic: 'MEMORYPOOL_METRICS_PUBLIC',
};

export function loadConfig(flags: Partial<ConfigInput> = {}, env: NodeJS.ProcessEnv = process.env): Config {
  const input: Record<string, unknown> = {};
  for (const [key, name] of Object.entries(ENV_NAMES)) {
    const value = env[name];
    if (value !== undefined && value !== '') input[key] = value;
  }
  for (const [key, value] of Object.entries(flags)) if (value !== undefined) input[key] = value;
  const parsed = configSchema.safeParse(input);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${ENV_NAMES[issue.path[0] as keyof Config] ?? issue.path.join('.')}: ${issue.message}`);
    throw new Error(`Invalid configuration: ${problems.join('; ')}`);
  }
  return parsed.data;
}
