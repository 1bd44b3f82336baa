import { createHash } from 'node:crypto';
import pg from 'pg';

/**
 * How the PostgreSQL store keeps any valid Unicode string exactly, NUL included, although a
 * `text` value cannot hold U+0000 and a `jsonb` one refuses `\u0000`.
 *
 * The escape is U+FDD0, a noncharacter (Unicode reserves those for a program's internal use):
 * NUL is written ESC "0" and ESC itself ESC ESC, so the mapping is one-to-one on every string
 * and a string holding neither is written as it is. Migration 3 doubled the ESC already stored,
 * so rows of earlier versions read through the same decoding. ESC is not ASCII: PostgreSQL's
 * JSON output and `JSON.stringify` write it as the character itself, never as an escape, so the
 * encoding can be applied to a JSON text as a whole (there it meets only the insides of strings,
 * keys included) and undone on the JSON text PostgreSQL returns, before it is parsed.
 *
 * A key column (a user id, a memory id, a request id) must also fit in a btree entry (at most
 * 2704 bytes for the whole index row): an encoded key longer than KEY_INLINE_BYTES is stored as
 * ESC "h" and its SHA-256, which no encoded string can spell (after ESC comes ESC or "0" only);
 * the full value is kept beside it where the store reads it back.
 */

const ESC = '\uFDD0';
/** ESC as SQL's `chr()` takes it. */
export const ESC_CODE = ESC.charCodeAt(0);
const NUL = '\u0000';
/** Two key columns of this size and the index row's overheads stay under PostgreSQL's 2704 bytes. */
export const KEY_INLINE_BYTES = 1024;

const RAW_SPECIALS = /[\u0000\uFDD0]/g;
const ENCODED_PAIRS = /\uFDD0([\uFDD00])/g;
/** In JSON text: the NUL escape, any other escape (consumed whole, so `\\u0000` is left alone), or ESC. */
const JSON_SPECIALS = /\\u0000|\\[\s\S]|\uFDD0/g;

/** A string as a `text` column holds it. */
export function encodeText(value: string): string {
  if (!value.includes(NUL) && !value.includes(ESC)) return value;
  return value.replace(RAW_SPECIALS, (char) => (char === NUL ? `${ESC}0` : ESC + ESC));
}

/** A `text` column's value as it was given to `encodeText`. */
export function decodeText(value: string): string {
  if (!value.includes(ESC)) return value;
  return value.replace(ENCODED_PAIRS, (_pair, next: string) => (next === '0' ? NUL : ESC));
}

/** A value as the JSON text of a `jsonb` parameter, every string in it (keys too) encoded. */
export function encodeJson(value: unknown): string {
  const json = JSON.stringify(value);
  if (!json.includes('\\u0000') && !json.includes(ESC)) return json;
  return json.replace(JSON_SPECIALS, (match) => (match === '\\u0000' ? `${ESC}0` : match === ESC ? ESC + ESC : match));
}

/** A `json`/`jsonb` column's text, decoded and parsed. */
export function decodeJson(text: string): unknown {
  if (!text.includes(ESC)) return JSON.parse(text);
  return JSON.parse(text.replace(ENCODED_PAIRS, (_pair, next: string) => (next === '0' ? '\\u0000' : ESC)));
}

/** A key as its column holds it: encoded, or its digest when too long for an index entry. */
export function encodeKey(value: string): string {
  const encoded = encodeText(value);
  if (encoded.length * 3 <= KEY_INLINE_BYTES || Buffer.byteLength(encoded, 'utf8') <= KEY_INLINE_BYTES) return encoded;
  return `${ESC}h${createHash('sha256').update(encoded, 'utf8').digest('hex')}`;
}

/** Whether a key column holds a digest (so the full value is kept elsewhere). */
export function isKeyDigest(key: string): boolean {
  return key.startsWith(`${ESC}h`);
}

const TEXT_OID = 25;
const JSON_OID = 114;
const JSONB_OID = 3802;

/**
 * The driver's parsers with every text and JSON column decoded: whatever a query reads back
 * (a user id, a memory's record, a version's entry) comes out as it was written.
 */
export const decodingTypes: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') => {
    if (format !== 'binary') {
      if (oid === TEXT_OID) return decodeText;
      if (oid === JSON_OID || oid === JSONB_OID) return decodeJson;
    }
    return pg.types.getTypeParser(oid, format);
  }) as pg.CustomTypesConfig['getTypeParser'],
};

/**
 * The SQL of `encodeKey`, for the migration that rewrites rows of earlier versions (a temporary
 * function: the migration's connection drops it).
 */
export const KEY_FUNCTION_SQL = `
CREATE FUNCTION pg_temp.memorypool_escaped(v text) RETURNS text LANGUAGE sql IMMUTABLE
  AS $$ SELECT replace(v, chr(${ESC_CODE}), chr(${ESC_CODE}) || chr(${ESC_CODE})) $$;
CREATE FUNCTION pg_temp.memorypool_key(v text) RETURNS text LANGUAGE sql IMMUTABLE
  AS $$ SELECT CASE WHEN octet_length(e) > ${KEY_INLINE_BYTES} THEN chr(${ESC_CODE}) || 'h' || encode(sha256(convert_to(e, 'UTF8')), 'hex') ELSE e END
        FROM (SELECT pg_temp.memorypool_escaped(v) AS e) AS escaped $$;
CREATE FUNCTION pg_temp.memorypool_has_special(v text) RETURNS boolean LANGUAGE sql IMMUTABLE
  AS $$ SELECT strpos(v, chr(${ESC_CODE})) > 0 OR octet_length(v) > ${KEY_INLINE_BYTES} $$;
`;
