import type { MessagePort } from 'node:worker_threads';
import { createError } from '../errors.js';
import type { EmbedOptions, Embedder } from '../embedding/embedder.js';
import { continueTrace, traceCarrier, type TraceCarrier } from '../telemetry/tracing.js';
import { fromWire, toWire, type WireError } from './wire.js';

/**
 * The encoder of a server's service threads: one encoder stack on the main thread (its copies on
 * threads of their own, its batching and its query-vector cache shared by every service thread),
 * reached over a MessagePort. A service thread's PortEmbedder posts texts; `serveEmbedder` on the
 * main thread encodes them and posts the vectors back in one transferred buffer.
 */

interface EmbedCall {
  id: number;
  texts: readonly string[];
  priority?: EmbedOptions['priority'];
  key?: string;
  /** The caller wants the run's times (a trace's encoder span). */
  timed: boolean;
  /** The caller's trace: the encoder's spans on the main thread are its children. */
  trace: TraceCarrier | null;
}

interface EmbedReply {
  id: number;
  vectors?: Float32Array;
  error?: WireError;
  /** The model run's start and end, Unix ms (each thread has its own performance.timeOrigin). */
  run?: [number, number];
}

export interface EmbedderIdentity {
  modelId: string;
  dimensions: number;
}

/** Answers the encode calls arriving on `port` with `embedder` (the main thread's side). */
export function serveEmbedder(port: MessagePort, embedder: Embedder): void {
  port.on('message', (call: EmbedCall) => {
    let run: [number, number] | undefined;
    const onRun = call.timed ? (startMs: number, endMs: number) => (run = [performance.timeOrigin + startMs, performance.timeOrigin + endMs]) : undefined;
    continueTrace(call.trace, () => embedder.embed(call.texts, { priority: call.priority, key: call.key, onRun })).then(
      (vectors) => {
        const flat = new Float32Array(vectors.length * embedder.dimensions);
        vectors.forEach((vector, i) => flat.set(vector, i * embedder.dimensions));
        const reply: EmbedReply = { id: call.id, vectors: flat, run };
        port.postMessage(reply, [flat.buffer]);
      },
      (error: unknown) => port.postMessage({ id: call.id, error: toWire(error), run } satisfies EmbedReply),
    );
  });
}

interface Pending {
  count: number;
  onRun?: EmbedOptions['onRun'];
  resolve: (vectors: Float32Array[]) => void;
  reject: (error: unknown) => void;
}

/** A service thread's encoder: the main thread's, over a port (see above). */
export class PortEmbedder implements Embedder {
  readonly modelId: string;
  readonly dimensions: number;
  private readonly port: MessagePort;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private closed = false;

  constructor(port: MessagePort, identity: EmbedderIdentity) {
    this.port = port;
    this.modelId = identity.modelId;
    this.dimensions = identity.dimensions;
    port.on('message', (reply: EmbedReply) => this.answer(reply));
    // Only calls in flight keep the thread alive on the port's account.
    port.unref();
  }

  /** The main thread started this thread once its encoder was ready. */
  ready(): Promise<void> {
    return Promise.resolve();
  }

  embed(texts: readonly string[], options: EmbedOptions = {}): Promise<Float32Array[]> {
    if (texts.length === 0) return Promise.resolve([]);
    if (this.closed) return Promise.reject(createError('EMBEDDER_UNAVAILABLE', 'The embedder was closed'));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      if (this.pending.size === 0) this.port.ref();
      this.pending.set(id, { count: texts.length, onRun: options.onRun, resolve, reject });
      const call: EmbedCall = { id, texts, priority: options.priority, key: options.key, timed: options.onRun !== undefined, trace: traceCarrier() };
      this.port.postMessage(call);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    const error = createError('EMBEDDER_UNAVAILABLE', 'The embedder was closed');
    for (const call of this.pending.values()) call.reject(error);
    this.pending.clear();
    this.port.close();
  }

  private answer(reply: EmbedReply): void {
    const call = this.pending.get(reply.id);
    if (!call) return;
    this.pending.delete(reply.id);
    if (this.pending.size === 0) this.port.unref();
    if (reply.run && call.onRun) call.onRun(reply.run[0] - performance.timeOrigin, reply.run[1] - performance.timeOrigin);
    if (reply.error !== undefined || !reply.vectors) {
      call.reject(reply.error ? fromWire(reply.error) : createError('EMBEDDER_UNAVAILABLE', 'Embedder failed: no vectors'));
      return;
    }
    const vectors: Float32Array[] = [];
    for (let i = 0; i < call.count; i++) vectors.push(reply.vectors.subarray(i * this.dimensions, (i + 1) * this.dimensions));
    call.resolve(vectors);
  }
}
