import type { FileHandle } from 'node:fs/promises';

/**
 * A memories file read a piece at a time through buffers kept for the next read, never into a
 * buffer of the file's size: memory fresh from the OS costs more to touch than what a load or a
 * count does with the bytes (on the 2-vCPU dev VM ~3 ms a megabyte; a 64 MB file, 20,000
 * memories, read whole and hashed 325-345 ms, through one reused buffer 70-83 ms:
 * CHANGELOG.md, "Large users load in pieces"). Each piece goes to the caller as a run of whole
 * lines, the line a piece cut carried over to the next.
 */

/** Bytes a read brings; a line longer than that (a memory of about a megabyte) grows the buffer it is handed in, for that read. */
const PIECE_BYTES = 1 << 20;
/** Buffers kept: more reads at once than this take a new one each. */
const SPARE_PIECES = 2;
const spare: Buffer[] = [];

export interface LineVisitor {
  /** Each piece's bytes as read, in the file's order (before its lines are handed over): a digest's input. */
  bytes?(piece: Buffer): void;
  /** Whole lines, `buffer[0, end)`, `end` just past a newline; false stops the read. */
  lines(buffer: Buffer, end: number): boolean;
}

export interface LinesRead {
  /** `short`: the file ended before `to`; `stopped`: the visitor said so. */
  status: 'read' | 'short' | 'stopped';
  /** Bytes after the last newline, never handed over: a line not finished (a torn or an appending write). */
  unfinished: number;
}

/**
 * The bytes [from, to) of the file behind `handle` (`from` a line's start), as runs of whole lines.
 * `pieceBytes` smaller than the default only in tests, to cut lines across many pieces.
 */
export async function readLines(handle: FileHandle, from: number, to: number, visitor: LineVisitor, pieceBytes = PIECE_BYTES): Promise<LinesRead> {
  const pooled = pieceBytes === PIECE_BYTES;
  let buffer = (pooled ? spare.pop() : undefined) ?? Buffer.allocUnsafeSlow(pieceBytes);
  const kept = buffer;
  try {
    // `filled` bytes of the buffer are read and not yet handed over: the start of a line the last piece cut.
    let filled = 0;
    for (let at = from; at < to; ) {
      if (filled === buffer.length) {
        const larger = Buffer.allocUnsafeSlow(buffer.length * 2);
        buffer.copy(larger, 0, 0, filled);
        buffer = larger;
      }
      const { bytesRead } = await handle.read(buffer, filled, Math.min(buffer.length - filled, to - at), at);
      if (bytesRead === 0) return { status: 'short', unfinished: filled };
      visitor.bytes?.(buffer.subarray(filled, filled + bytesRead));
      at += bytesRead;
      filled += bytesRead;
      const end = buffer.lastIndexOf(0x0a, filled - 1) + 1;
      if (end === 0) continue;
      if (!visitor.lines(buffer, end)) return { status: 'stopped', unfinished: 0 };
      buffer.copy(buffer, 0, end, filled);
      filled -= end;
    }
    return { status: 'read', unfinished: filled };
  } finally {
    if (pooled && spare.length < SPARE_PIECES) spare.push(kept);
  }
}
