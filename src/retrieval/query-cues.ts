/**
 * Who a query is about, read from its words. Pure functions of the query and the user's known
 * speakers (lowercased roles), so the cues can be tested on their own.
 */
import { hasTimeExpression } from './time-cues/time-expression.js';

/** Roles that name no person: a question mentioning "user" is not about a speaker called user. */
const GENERIC_ROLES = new Set(['user', 'assistant', 'system', 'human', 'ai', 'bot', 'tool', 'agent', 'model']);
const USER_ROLES = ['user', 'human'];
const ASSISTANT_ROLES = ['assistant', 'ai', 'bot', 'model', 'agent'];

/** "you told me", "you recommended": the question asks what the assistant said. */
const ASKS_ASSISTANT = /\byou\s+(?:(?:had|have|just)\s+)?(?:said|say|told|tell|mentioned|mention|recommended|recommend|suggested|suggest|gave|give|listed|list|provided|provide|shared|share|explained|explain|described|describe|wrote|write|came up with|created|made)\b/i;
/** The speaker talks about themself. */
const FIRST_PERSON = /\b(?:i|me|my|mine|myself|i['’](?:m|ve|d|ll))\b/i;

/** Words that ask for an inference about a person rather than a told fact ("Would Melanie enjoy…", "What might John's…"). */
const ASKS_INFERENCE = /\b(?:would|might|likely|could|potentially|probably|suspected|considered)\b|\bbased on\b/i;
/** A question asking for the items of a kind: "What activities has…", "Which books does…", "What kinds of art…". */
const ASKS_LIST = /^\s*(?:what|which)\s+(?:(?:kinds?|types?|sorts?)\s+of\s+)?(?:[\p{L}-]+\s+)?[\p{L}-]+s\s+(?:has|have|does|do|did|is|are|was|were)\b/iu;
/** Someone speaking of themself, in a turn: I, me, my, we, our. */
const SPEAKS_OF_SELF = /\b(?:i|me|my|mine|myself|we|us|our|ours|i['’](?:m|ve|d|ll)|we['’](?:re|ve|d|ll))\b/i;

/**
 * Whether a query asks about a person rather than one event: an inference ("Would X prefer…",
 * "What might X…") or a list of things of a kind ("What activities has X done?"), whose evidence
 * is many of the person's own turns told in the first person (see `disclosureCue`).
 */
export function asksAboutPerson(query: string): boolean {
  return ASKS_INFERENCE.test(query) || ASKS_LIST.test(query);
}

/** Whether a turn's speaker speaks of themself (first person, singular or plural). */
export function speaksOfSelf(text: string): boolean {
  return SPEAKS_OF_SELF.test(text);
}

function words(query: string): Set<string> {
  return new Set(query.toLowerCase().match(/[\p{L}\p{N}'’-]+/gu) ?? []);
}

/**
 * A turn that is itself a question ("What other hobbies have you found?") between named
 * speakers: it shares the question's words but rarely holds the answer (the next turn does).
 * Not one that says when something happened before asking back ("I got mentored yesterday!
 * What's up with you?"): that turn tells the event, and it is what a "when" question looks for.
 * Not in user/assistant histories, where the user's own questions often carry the fact.
 * `saysWhen` is `hasTimeExpression(text)`, for a caller that has it already.
 */
export function isDistractorQuestion(text: string, speaker: string | null, saysWhen?: boolean): boolean {
  return speaker !== null && !GENERIC_ROLES.has(speaker) && /\?["'’)\]]*\s*$/.test(text) && !(saysWhen ?? hasTimeExpression(text));
}

/** The one known speaker a query names by name, if exactly one (a soft boost, never a filter). */
export function namedSpeaker(query: string, speakers: readonly string[]): string | null {
  const said = words(query);
  const named = speakers.filter((speaker) => {
    if (GENERIC_ROLES.has(speaker)) return false;
    const first = speaker.split(/\s+/)[0];
    return said.has(speaker) || said.has(first) || said.has(`${first}'s`) || said.has(`${first}’s`);
  });
  return named.length === 1 ? named[0] : null;
}

/**
 * In a user/assistant history, a first-person question ("what did I buy?") is about the user's
 * own turns, and "what did you recommend?" about the assistant's. Null when the history has no
 * such role or the query says neither.
 */
export function addressedRole(query: string, speakers: readonly string[]): string | null {
  const pick = (candidates: readonly string[]): string | null => candidates.find((role) => speakers.includes(role)) ?? null;
  if (ASKS_ASSISTANT.test(query)) return pick(ASSISTANT_ROLES);
  if (FIRST_PERSON.test(query)) return pick(USER_ROLES);
  return null;
}
