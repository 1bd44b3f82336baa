import type { z } from 'zod';
import type * as client from 'memorypool-client';
import type { invokePayloadSchema } from '../protocol/invoke.js';
import type { addParamsSchema, batchAddSchema, batchDeleteSchema, batchUpdateSchema, entitiesParamsSchema, idParamsSchema, listParamsSchema, updateBodySchema, userScopeSchema } from '../protocol/memorypool-schemas.js';
import type { addRequestSchema, searchRequestSchema } from '../protocol/platform.js';
import type * as answers from '../protocol/response-schemas.js';
import type * as changeAnswers from '../protocol/change-schemas.js';

/**
 * The client package's types (packages/client/src/types.ts, written out so it needs no zod) held
 * to the server's: `npm run build` fails here when one of them differs from the type inferred
 * from the zod schema the server validates that request with or describes that answer with.
 * Types only: this module is empty at run time.
 */

/** true only when A and B are each assignable to the other. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Holds<T extends true> = T;

export type ClientContract = [
  Holds<Same<client.Memory, z.infer<typeof answers.memorySchema>>>,
  Holds<Same<client.ScoredMemory, z.infer<typeof answers.scoredMemorySchema>>>,
  Holds<Same<client.ScoreExplanation, z.infer<typeof answers.explanationSchema>>>,
  Holds<Same<client.MemoryVersion, z.infer<typeof answers.memoryVersionSchema>>>,
  Holds<Same<client.MemoryHistory, z.infer<typeof answers.historySchema>>>,
  Holds<Same<client.PoolStats, z.infer<typeof answers.poolStatsSchema>>>,
  Holds<Same<client.Health, z.infer<typeof answers.healthSchema>>>,
  Holds<Same<client.Deleted, z.infer<typeof answers.deletedSchema>>>,
  Holds<Same<client.DeletedUser, z.infer<typeof answers.deletedUserSchema>>>,
  Holds<Same<client.AddAnswer, z.infer<typeof answers.addAnswerSchema>>>,
  Holds<Same<client.SearchAnswer, z.infer<typeof answers.searchAnswerSchema>>>,
  Holds<Same<client.ListPage, z.infer<typeof answers.listPageSchema>>>,
  Holds<Same<client.DeletedCount, z.infer<typeof answers.deletedCountSchema>>>,
  Holds<Same<client.MemoryMetadata, NonNullable<z.input<typeof addParamsSchema>['metadata']>>>,
  // The client makes the request id when none is given, so it is optional on this side only.
  Holds<Same<client.AddParams, Omit<z.input<typeof addRequestSchema>, 'request_id'> & { request_id?: string }>>,
  Holds<Same<client.SearchParams, z.input<typeof searchRequestSchema>>>,
  Holds<Same<client.RememberParams, z.input<typeof addParamsSchema>>>,
  Holds<Same<client.EntitiesParams, Omit<z.input<typeof entitiesParamsSchema>, 'limit'> & { limit?: number }>>,
  Holds<Same<client.EntitiesAnswer, z.infer<typeof answers.entitiesAnswerSchema>>>,
  Holds<Same<client.MemoryFilters, Pick<z.input<typeof listParamsSchema>, 'tag' | 'entity' | 'agent_id' | 'run_id' | 'filter' | 'since' | 'until' | 'user_id' | 'user_ids'> & { limit?: number }>>,
  Holds<Same<client.UserScope, Omit<z.input<typeof idParamsSchema>, 'id'>>>,
  Holds<Same<client.StatsParams, z.input<typeof userScopeSchema>>>,
  Holds<Same<client.UpdateParams, z.input<typeof updateBodySchema>>>,
  Holds<Same<client.InvokePayload, z.input<typeof invokePayloadSchema>>>,
  Holds<Same<client.BatchOperation, z.input<typeof batchAddSchema> | z.input<typeof batchUpdateSchema> | z.input<typeof batchDeleteSchema>>>,
  Holds<Same<client.BatchAnswer, z.infer<typeof answers.batchAnswerSchema>>>,
  Holds<Same<client.ChangesParams, z.input<typeof changeAnswers.changesParamsSchema>>>,
  Holds<Same<client.ChangeEvent, z.infer<typeof changeAnswers.changeEventSchema>>>,
  Holds<Same<client.ChangesPage, z.infer<typeof changeAnswers.changesPageSchema>>>,
];

// The check itself can fail: two shapes that differ in one field's type are not the same.
// @ts-expect-error a memory whose version is a string is not the server's memory
export type CheckCanFail = Holds<Same<Omit<client.Memory, 'version'> & { version: string }, z.infer<typeof answers.memorySchema>>>;
