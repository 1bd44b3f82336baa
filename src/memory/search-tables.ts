import type { RetrievalWeights } from '../retrieval/retrieval-config.js';
import type { StoredRecord } from '../store/stored-record.js';
import { corpusUnit } from './corpus-units.js';
import { planQuery, queryTexts } from './query-plan.js';
import type { SearchRequest } from './types.js';

/**
 * What a process's first Search and first load would otherwise read and build on their own, made
 * ready ahead: WordNet's index files (~6 MB, read on a query's first lookup), the time cues' tables
 * and the analyzer's and the entity finder's expressions. A server does this while the encoder's
 * model loads (MemoryService.open), a wait that leaves its main thread idle, so its start takes
 * no longer; without it a server's first Search of a user of ten memories took 73-78 ms against
 * 13 ms for the next (2-vCPU dev VM; CHANGELOG.md, "Large users load in pieces").
 */
export function prepareSearchTables(weights: RetrievalWeights): void {
  const request: SearchRequest = { userId: '', query: QUESTION, limit: 1 };
  planQuery(request, queryTexts(request), { speakers: ['caroline', 'melanie'], newestTimeMs: NEWEST_MS }, weights);
  corpusUnit(RECORD, null);
}

/** Words of every part of speech WordNet has (each lookup reads all four index files), a name, a period. */
const QUESTION = 'What did Caroline quickly paint for her sister in Paris last summer?';
const NEWEST_MS = Date.UTC(2023, 5, 1);

const RECORD: StoredRecord = {
  id: 'search-tables',
  user_id: '',
  text: "I finally painted the lake at sunset with Melanie last Saturday, on 4 May 2023 at 3 pm!",
  tags: ['art'],
  importance: 0.5,
  source: 'add',
  created_at: '2023-05-06T10:00:00.000Z',
  occurred_at: '2023-05-06T10:00:00.000Z',
  role: 'Caroline',
  session_id: 'session_1',
  seq: 0,
};
